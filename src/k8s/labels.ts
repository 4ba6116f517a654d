// Label selectors over plain label maps, as k8s.io/apimachinery/pkg/apis/meta/v1 LabelSelectorAsSelector.
import type { LabelSelector, LabelSelectorRequirement } from './types.ts';

export type Labels = Readonly<Record<string, string>> | undefined;

/**
 * Validation errors of a label selector (empty list = valid): In/NotIn need values, Exists/DoesNotExist take none,
 * unknown operators are rejected. Key/value syntax is the webhook's business, not checked here.
 */
export function labelSelectorErrors(selector: LabelSelector | null | undefined): string[] {
  const errs: string[] = [];
  for (const [i, r] of (selector?.matchExpressions ?? []).entries()) {
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0)
          errs.push(`matchExpressions[${i}]: values: must be specified when operator is ${r.operator}`);
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0)
          errs.push(`matchExpressions[${i}]: values: may not be specified when operator is ${r.operator}`);
        break;
      default:
        errs.push(`matchExpressions[${i}]: operator: unsupported "${String((r as { operator: unknown }).operator)}"`);
    }
  }
  return errs;
}

/** True for a selector with no matchLabels and no matchExpressions (`{}`): it selects everything. */
export function isEmptyLabelSelector(selector: LabelSelector | null | undefined): boolean {
  if (!selector) return false;
  return Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
}

function requirementMatches(r: LabelSelectorRequirement, labels: Labels): boolean {
  const has = labels !== undefined && Object.hasOwn(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.operator) {
    case 'In':
      return has && (r.values ?? []).includes(value as string);
    case 'NotIn':
      return !has || !(r.values ?? []).includes(value as string);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      return false;
  }
}

/**
 * LabelSelectorAsSelector(selector).Matches(labels). A nil selector matches nothing, an empty one everything;
 * an invalid selector matches nothing (upstream returns an error; callers check labelSelectorErrors first).
 */
export function labelSelectorMatches(selector: LabelSelector | null | undefined, labels: Labels): boolean {
  if (!selector) return false;
  if (labelSelectorErrors(selector).length > 0) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    if (labels === undefined || !Object.hasOwn(labels, k) || labels[k] !== v) return false;
  }
  return (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}
