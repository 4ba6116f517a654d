// A half-applied in-place update must not leave pods NotReady for ever. The executor writes InPlaceUpdateReady False
// on pods/status and then the pod's new image; here a ValidatingAdmissionPolicy on the real apiserver refuses the
// second write (as another admission controller might). The condition is put back (and a later sync's refresh would
// set it True: no in-place update in flight, as Kruise's inplaceupdate Refresh), a Warning event says what happened,
// retries back off instead of flipping the pods NotReady in a loop, and once the policy is gone the update goes
// through in place. All along, a pod counts as updated (InPlaceUpdateReady True after an in-place update) only when
// its status reports the spec's image.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, kubectl, podReady, type PodJson } from '../lib/kube.ts';
import { sleep } from '../../src/testing/wait.ts';
import { HASH_LABEL, PodWatch, adsPods, eventsFor, imagePatch, patchAds, terminating } from '../lib/ads.ts';
import { fixture, rolledOutDaemonSet } from './lib.ts';

const IN_PLACE_UPDATE_READY = 'InPlaceUpdateReady';
const REFUSE_LABEL = 'e2e-refuse-image-change';

const cond = (p: PodJson, type: string) =>
  (p.status?.conditions as { type: string; status: string; reason?: string }[] | undefined)?.find(
    (c) => c.type === type,
  );

describe('InPlaceIfPossible when the image change is refused', { timeout: 300_000 }, () => {
  const f = fixture('inplace-refused', 3);
  const name = 'refused';
  let watch: PodWatch | undefined;

  test('the pods go back to Ready with InPlaceUpdateReady True, a Warning says why; without the policy the update goes through in place', async (t) => {
    const policy = `${f.ns}-refuse-image-change`;
    t.after(async () => {
      watch?.stop();
      await kubectl([
        'delete',
        'validatingadmissionpolicybinding,validatingadmissionpolicy',
        policy,
        '--ignore-not-found',
      ]);
    });
    const {
      ds,
      hash: v1,
      pods: initial,
    } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: '100%' },
        },
      },
      mutate: (m) => {
        const template = m.spec.template as { metadata: { labels: Record<string, string> } };
        template.metadata.labels[REFUSE_LABEL] = f.ns;
      },
    });
    const uids = [...initial.values()].map((p) => p.metadata.uid).sort();

    // Refuse any change of a container image of this DaemonSet's pods (pods/status writes are not matched).
    await apply({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: policy },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          objectSelector: { matchLabels: { [REFUSE_LABEL]: f.ns } },
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] }],
        },
        validations: [
          {
            expression:
              'object.spec.containers.all(c, oldObject.spec.containers.exists(o, o.name == c.name && o.image == c.image))',
            message: 'e2e: image changes of running pods are refused',
          },
        ],
      },
    });
    await apply({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: policy },
      spec: { policyName: policy, validationActions: ['Deny'] },
    });
    const probe = [...initial.values()][0]!;
    await eventually('the policy to refuse an image change (server-side dry run)', async () => {
      try {
        await kubectl([
          'patch',
          'pod',
          probe.metadata.name,
          '-n',
          f.ns,
          '--dry-run=server',
          '--type=strategic',
          '-p',
          JSON.stringify({ spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } }),
        ]);
        return false;
      } catch (err) {
        return /image changes of running pods are refused/.test(String(err));
      }
    });

    // Every state of every pod: how often it was flipped to InPlaceUpdateReady False, and never "updated"
    // (InPlaceUpdateReady True after an in-place update) while its status reports another image than the spec's.
    const startedFalse = new Map<string, number>();
    const violations: string[] = [];
    const lastStatus = new Map<string, string | undefined>();
    watch = await PodWatch.start(f.ns, `app=${name}`, (_w, ev) => {
      const p = ev.pod;
      if (ev.type === 'DELETED' || terminating(p)) violations.push(`pod ${p.metadata.name} deleted`);
      const c = cond(p, IN_PLACE_UPDATE_READY);
      if (c?.status === 'False' && lastStatus.get(p.metadata.uid) !== 'False') {
        startedFalse.set(p.metadata.uid, (startedFalse.get(p.metadata.uid) ?? 0) + 1);
      }
      lastStatus.set(p.metadata.uid, c?.status);
      const state = p.metadata.annotations?.['apps.kruise.io/inplace-update-state'];
      const running = p.status?.containerStatuses?.[0]?.image;
      if (state && c?.status === 'True' && running !== p.spec.containers[0]?.image) {
        violations.push(`${p.metadata.name}: InPlaceUpdateReady True while running ${running}`);
      }
    });
    const refusedAt = Date.now();
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));

    const warning = await eventually('a Warning FailedUpdatePodInPlace saying the pod was left unchanged', async () =>
      (await eventsFor(f.ns, name, ds.metadata.uid)).find(
        (e) =>
          e.type === 'Warning' &&
          e.reason === 'FailedUpdatePodInPlace' &&
          /image changes of running pods are refused/.test(e.message) &&
          /InPlaceUpdateReady condition restored/.test(e.message),
      ),
    );
    assert.match(warning.message, /^failed to update pod \S+ in-place\(revision /);
    await eventually('every pod Ready again, InPlaceUpdateReady True, on the old image', async () => {
      const pods = await adsPods(f.ns, name);
      return (
        pods.length === f.nodes.length &&
        pods.every(
          (p) =>
            podReady(p) &&
            cond(p, IN_PLACE_UPDATE_READY)?.status === 'True' &&
            p.spec.containers[0]?.image === 'busybox:1.36' &&
            p.metadata.labels?.[HASH_LABEL] === v1,
        )
      );
    });
    assert.ok(
      [...initial.values()].some((p) => (startedFalse.get(p.metadata.uid) ?? 0) > 0),
      'the update was attempted (InPlaceUpdateReady False, then back)',
    );

    // Retries back off: over 15 s a pod is flipped a handful of times, not in a loop.
    await sleep(Math.max(0, refusedAt + 15_000 - Date.now()));
    const flips = [...startedFalse.values()];
    assert.ok(
      flips.every((n) => n <= 6),
      `attempts per pod in 15 s: ${flips} (the retries back off: 1 s, 2 s, 4 s, 8 s)`,
    );

    // Without the policy, a retry goes through: the same pods, updated in place.
    await kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', policy]);
    const updated = await eventually(
      'the in-place update to go through once the policy is gone',
      async () => {
        const pods = await adsPods(f.ns, name);
        return (
          pods.length === f.nodes.length &&
          pods.every(
            (p) =>
              p.metadata.labels?.[HASH_LABEL] !== v1 &&
              p.status?.containerStatuses?.[0]?.image === 'busybox:1.37' &&
              cond(p, IN_PLACE_UPDATE_READY)?.status === 'True' &&
              podReady(p),
          ) &&
          pods
        );
      },
      { timeoutMs: 120_000 },
    );
    assert.deepEqual(
      updated.map((p) => p.metadata.uid).sort(),
      uids,
      'the same pods (UIDs kept): updated in place, not recreated',
    );
    assert.deepEqual(violations, []);
  });
});
