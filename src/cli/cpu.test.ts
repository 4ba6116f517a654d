import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { quotaCores, readUsableCores, requestCores, usableCores } from './cpu.ts';

describe('the cores the webhook sizes by', () => {
  test('quotaCores: cgroup v2 cpu.max and v1 quota/period, rounded up; none without a quota', () => {
    const rows: [string | undefined, string | undefined, string | undefined, number | undefined][] = [
      ['max 100000\n', undefined, undefined, undefined],
      ['200000 100000\n', undefined, undefined, 2],
      ['150000 100000', undefined, undefined, 2],
      ['50000 100000', undefined, undefined, 1],
      [undefined, '-1\n', '100000\n', undefined],
      [undefined, '300000', '100000', 3],
      [undefined, undefined, undefined, undefined],
      ['garbage', undefined, undefined, undefined],
    ];
    for (const [v2, q, p, want] of rows) assert.equal(quotaCores(v2, q, p), want, `${v2} ${q} ${p}`);
  });

  test('requestCores: millicores rounded up to whole cores', () => {
    assert.equal(requestCores('100'), 1);
    assert.equal(requestCores('1000'), 1);
    assert.equal(requestCores('1500'), 2);
    assert.equal(requestCores(''), undefined);
    assert.equal(requestCores('lots'), undefined);
    assert.equal(requestCores('0'), undefined);
  });

  test('usableCores: the quota, else the request, within the machine, at least 1', () => {
    assert.equal(usableCores({ machineCores: 16 }), 16);
    assert.equal(usableCores({ machineCores: 16, request: 1 }), 1);
    assert.equal(usableCores({ machineCores: 16, quota: 2, request: 1 }), 2);
    assert.equal(usableCores({ machineCores: 2, quota: 8 }), 2);
  });

  test('readUsableCores: a v2 quota at the process cgroup, a v1 quota, the env request, the machine', () => {
    const files = (f: Record<string, string>) => (p: string) => f[p];
    assert.equal(
      readUsableCores(
        files({ '/proc/self/cgroup': '0::/pod/c\n', '/sys/fs/cgroup/pod/c/cpu.max': '100000 100000' }),
        {},
      ),
      1,
    );
    assert.equal(
      readUsableCores(
        files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '100000', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' }),
        {},
      ),
      1,
    );
    assert.equal(readUsableCores(files({}), { CPU_REQUEST_MILLICORES: '100' }), 1);
  });
});
