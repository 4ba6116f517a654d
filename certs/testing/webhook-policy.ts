// What every admission webhook entry of this project must say, whoever writes it (the manager through
// certs/webhook-config.ts, or the Helm chart): one expectation for both their tests, written out here rather than
// read from webhook-config.ts so that it checks the code instead of repeating it. Used by tests only.
import assert from 'node:assert/strict';

/** Fails closed, has no side effects, and sees only CREATE and UPDATE of apps.kruise.io daemonsets, v1alpha1 and v1beta1. */
export function assertDaemonSetWebhookPolicy(w: { failurePolicy?: unknown; sideEffects?: unknown; rules?: unknown }) {
  assert.equal(w.failurePolicy, 'Fail');
  assert.equal(w.sideEffects, 'None');
  assert.deepEqual(w.rules, [
    {
      apiGroups: ['apps.kruise.io'],
      apiVersions: ['v1alpha1', 'v1beta1'],
      resources: ['daemonsets'],
      operations: ['CREATE', 'UPDATE'],
      scope: 'Namespaced',
    },
  ]);
}

/** The same for the DaemonSetSetting webhooks: CREATE and UPDATE of advanced-daemonset.io daemonsetsettings, v1alpha1. */
export function assertDaemonSetSettingWebhookPolicy(w: {
  failurePolicy?: unknown;
  sideEffects?: unknown;
  rules?: unknown;
}) {
  assert.equal(w.failurePolicy, 'Fail');
  assert.equal(w.sideEffects, 'None');
  assert.deepEqual(w.rules, [
    {
      apiGroups: ['advanced-daemonset.io'],
      apiVersions: ['v1alpha1'],
      resources: ['daemonsetsettings'],
      operations: ['CREATE', 'UPDATE'],
      scope: 'Namespaced',
    },
  ]);
}
