import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FEATURE_GATE_DEFAULTS, parseFeatureGates } from './feature-gates.ts';

describe('parseFeatureGates', () => {
  const ok: [string | undefined, Partial<Record<keyof typeof FEATURE_GATE_DEFAULTS, boolean>>][] = [
    [undefined, {}],
    ['', {}],
    ['KruiseDaemon=false', { KruiseDaemon: false }],
    [
      ' PreDownloadImageForDaemonSetUpdate=true , PodWebhook=false',
      { PreDownloadImageForDaemonSetUpdate: true, PodWebhook: false },
    ],
  ];
  for (const [value, changed] of ok) {
    test(`accepts ${JSON.stringify(value)}`, () => {
      assert.deepEqual(parseFeatureGates(value), { ...FEATURE_GATE_DEFAULTS, ...changed });
    });
  }

  const bad: [string, RegExp][] = [
    ['KruiseDaemon', /"KruiseDaemon" is not Name=true or Name=false/],
    ['KruiseDaemon=yes', /is not Name=true/],
    ['NoSuchGate=true', /unknown feature gate "NoSuchGate"; known: PreDownloadImageForDaemonSetUpdate/],
  ];
  for (const [value, message] of bad) {
    test(`refuses ${value}`, () => assert.throws(() => parseFeatureGates(value), message));
  }
});
