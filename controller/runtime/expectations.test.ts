import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ControllerExpectations,
  EXPECTATIONS_TIMEOUT_MS,
  isResourceVersionNewer,
  ResourceVersionExpectations,
  UIDTrackingControllerExpectations,
} from './expectations.ts';

function fakeClock() {
  const c = { now: 1_000_000, tick: (ms: number) => (c.now += ms), fn: () => c.now };
  return c;
}

describe('ControllerExpectations', () => {
  test('unsatisfied until every expected create and delete is observed', () => {
    const clock = fakeClock();
    const e = new ControllerExpectations(clock.fn);
    assert.equal(e.satisfiedExpectations('ns/ds'), true, 'no record: a new controller may act');
    e.expectCreations('ns/ds', 2);
    assert.equal(e.satisfiedExpectations('ns/ds'), false);
    e.creationObserved('ns/ds');
    assert.equal(e.satisfiedExpectations('ns/ds'), false);
    e.creationObserved('ns/ds');
    assert.equal(e.satisfiedExpectations('ns/ds'), true);
    e.expectDeletions('ns/ds', 1);
    e.raiseExpectations('ns/ds', 1, 0);
    assert.deepEqual(e.getExpectations('ns/ds'), { add: 1, del: 1, timestamp: clock.now });
    e.deletionObserved('ns/ds');
    e.creationObserved('ns/ds');
    assert.equal(e.satisfiedExpectations('ns/ds'), true);
    e.deleteExpectations('ns/ds');
    assert.equal(e.getExpectations('ns/ds'), undefined);
  });

  test('expire after 5 minutes so a lost event cannot wedge the controller', () => {
    const clock = fakeClock();
    const e = new ControllerExpectations(clock.fn);
    e.expectCreations('k', 3);
    clock.tick(EXPECTATIONS_TIMEOUT_MS);
    assert.equal(e.satisfiedExpectations('k'), false);
    assert.equal(e.expectationAgeMs('k'), EXPECTATIONS_TIMEOUT_MS);
    clock.tick(1);
    assert.equal(e.satisfiedExpectations('k'), true);
  });

  test('UID tracking counts each deleted pod once', () => {
    const e = new UIDTrackingControllerExpectations(fakeClock().fn);
    e.expectDeletionsOf('ns/ds', ['ns/p1', 'ns/p2']);
    e.deletionObservedOf('ns/ds', 'ns/p1');
    e.deletionObservedOf('ns/ds', 'ns/p1'); // the DELETED event and a relist tombstone
    assert.equal(e.satisfiedExpectations('ns/ds'), false);
    e.deletionObservedOf('ns/ds', 'ns/other');
    assert.equal(e.getExpectations('ns/ds')?.del, 1);
    e.deletionObservedOf('ns/ds', 'ns/p2');
    assert.equal(e.satisfiedExpectations('ns/ds'), true);
    e.deleteExpectations('ns/ds');
    assert.equal(e.getUIDs('ns/ds'), undefined);
  });
});

describe('ResourceVersionExpectations', () => {
  const pod = (resourceVersion: string) => ({ metadata: { uid: 'u1', resourceVersion } });

  test('a cached copy older than our write is not acted on; newer or equal clears it', () => {
    const clock = fakeClock();
    const e = new ResourceVersionExpectations(clock.fn);
    e.expect(pod('100'));
    clock.tick(1000);
    assert.deepEqual(e.isSatisfied(pod('99')), { satisfied: false, unsatisfiedForMs: 1000, timedOut: false });
    e.observe(pod('99'));
    assert.equal(e.size, 1);
    assert.equal(e.isSatisfied(pod('100')).satisfied, true);
    assert.equal(e.size, 0);
    e.expect(pod('200'));
    e.observe(pod('201'));
    assert.equal(e.size, 0);
    assert.equal(e.isSatisfied(pod('5')).satisfied, true, 'nothing expected');
  });

  test('compares numerically, keeps the highest expectation, times out after 5 minutes', () => {
    const clock = fakeClock();
    const e = new ResourceVersionExpectations(clock.fn);
    e.expect(pod('1000'));
    e.expect(pod('999')); // older write result: ignored
    assert.equal(e.isSatisfied(pod('999')).satisfied, false);
    clock.tick(EXPECTATIONS_TIMEOUT_MS);
    assert.deepEqual(e.isSatisfied(pod('999')), {
      satisfied: true,
      unsatisfiedForMs: EXPECTATIONS_TIMEOUT_MS,
      timedOut: true,
    });
    assert.equal(e.size, 0);
    e.expect(pod('7'));
    e.delete(pod('7'));
    assert.equal(e.size, 0);
  });

  test('the keys of the objects with an expectation, by namespace and name', () => {
    const e = new ResourceVersionExpectations(fakeClock().fn);
    e.expect({ metadata: { uid: 'a', resourceVersion: '1', namespace: 'ns', name: 'p-a' } });
    e.expect({ metadata: { uid: 'b', resourceVersion: '2', name: 'node-b' } });
    assert.deepEqual([...e.objectKeys()], ['ns/p-a', 'node-b']);
    e.observe({ metadata: { uid: 'a', resourceVersion: '1' } });
    assert.deepEqual([...e.objectKeys()], ['node-b']);
  });

  test('isResourceVersionNewer', () => {
    assert.equal(isResourceVersionNewer('9', '10'), true, 'numeric, not lexicographic');
    assert.equal(isResourceVersionNewer('10', '9'), false);
    assert.equal(isResourceVersionNewer('', '1'), true);
    assert.equal(isResourceVersionNewer('abc', '1'), true);
    assert.equal(isResourceVersionNewer('1', 'abc'), false);
    assert.equal(isResourceVersionNewer('18446744073709551616', '18446744073709551617'), true);
  });
});
