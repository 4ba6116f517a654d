import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FEATURE_GATE_DEFAULTS, parseFeatureGates } from './feature-gates.ts';

describe('parseFeatureGates', () => {
  const ok: { value: string | undefined; changed: Partial<Record<keyof typeof FEATURE_GATE_DEFAULTS, boolean>> }[] = [
    { value: undefined, changed: {} },
    { value: '', changed: {} },
    { value: 'KruiseDaemon=false', changed: { KruiseDaemon: false } },
    {
      value: ' PreDownloadImageForDaemonSetUpdate=true , PodWebhook=false',
      changed: { PreDownloadImageForDaemonSetUpdate: true, PodWebhook: false },
    },
  ];
  for (const { value, changed } of ok) {
    test(`accepts ${JSON.stringify(value)}`, () => {
      assert.deepEqual(parseFeatureGates(value), { ...FEATURE_GATE_DEFAULTS, ...changed });
    });
  }

  const bad: { value: string; message: RegExp }[] = [
    { value: 'KruiseDaemon', message: /"KruiseDaemon" is not Name=true or Name=false/ },
    { value: 'KruiseDaemon=yes', message: /is not Name=true/ },
    {
      value: 'NoSuchGate=true',
      message: /unknown feature gate "NoSuchGate"; known: PreDownloadImageForDaemonSetUpdate/,
    },
  ];
  for (const { value, message } of bad) {
    test(`refuses ${value}`, () => assert.throws(() => parseFeatureGates(value), message));
  }
});
