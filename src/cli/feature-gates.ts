// kruise-manager's --feature-gates, limited to the gates that touch Advanced DaemonSets
// (https://github.com/openkruise/kruise/blob/master/pkg/features/kruise_features.go).
// Parsed strictly, as Go's component-base does: a typo or an unknown gate stops the manager instead of being ignored.

/**
 * The gates and their defaults, as in Kruise, but InPlaceWorkloadVerticalScaling: on here (Kruise: alpha, off),
 * since Kubernetes' in-place pod resize is GA since 1.35; the controller still keeps it off where the apiserver
 * does not serve pods/resize (controller/daemonset/controller.ts, resolveInPlaceResize).
 */
export const FEATURE_GATE_DEFAULTS = {
  PreDownloadImageForDaemonSetUpdate: false,
  KruiseDaemon: true,
  InPlaceUpdateEnvFromMetadata: true,
  InPlaceWorkloadVerticalScaling: true,
  DaemonSetPruneIneligibleNodes: false,
  PodWebhook: true,
  KruisePodReadinessGate: false,
} as const;

export type FeatureGate = keyof typeof FEATURE_GATE_DEFAULTS;
export type FeatureGates = Record<FeatureGate, boolean>;

const isGate = (name: string): name is FeatureGate => Object.hasOwn(FEATURE_GATE_DEFAULTS, name);

/**
 * "A=true,B=false" over the defaults. Throws an Error whose message names the bad pair; the
 * caller turns it into a user error.
 */
export function parseFeatureGates(value: string | undefined): FeatureGates {
  const gates: FeatureGates = { ...FEATURE_GATE_DEFAULTS };
  for (const pair of (value ?? '').split(',').map((p) => p.trim())) {
    if (pair === '') continue;
    const m = /^([A-Za-z0-9]+)=(true|false)$/.exec(pair);
    if (!m) throw new Error(`"${pair}" is not Name=true or Name=false`);
    const name = m[1]!;
    if (!isGate(name)) {
      throw new Error(`unknown feature gate "${name}"; known: ${Object.keys(FEATURE_GATE_DEFAULTS).join(', ')}`);
    }
    gates[name] = m[2] === 'true';
  }
  return gates;
}
