// Label selectors over plain label maps, as k8s.io/apimachinery/pkg/apis/meta/v1 LabelSelectorAsSelector.
import type { LabelSelector, LabelSelectorRequirement } from './types.ts';

export type Labels = Readonly<Record<string, string>> | undefined;

/**
 * Validation errors of a label selector (empty list = valid): In/NotIn need values, Exists/DoesNotExist take none,
 * unknown operators are rejected. Key/value syntax is the webhook's business, not checked here.
 */
export function labelSelectorErrors(selector: LabelSelector | null | undefined): string[] {
  const errs: string[] = [];
  (selector?.matchExpressions ?? []).forEach((r, i) => {
    const err = requirementError(r, i);
    if (err !== undefined) errs.push(err);
  });
  return errs;
}

/** Why the requirement at matchExpressions[i] is invalid, or undefined (its message made only then). */
function requirementError(r: LabelSelectorRequirement, i: number): string | undefined {
  const values = r.values?.length ?? 0;
  switch (r.operator) {
    case 'In':
    case 'NotIn':
      return values === 0
        ? `matchExpressions[${i}]: values: must be specified when operator is ${r.operator}`
        : undefined;
    case 'Exists':
    case 'DoesNotExist':
      return values > 0
        ? `matchExpressions[${i}]: values: may not be specified when operator is ${r.operator}`
        : undefined;
    default:
      return `matchExpressions[${i}]: operator: unsupported "${String((r as { operator: unknown }).operator)}"`;
  }
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
  // Called for every pod of a sync (claimObjects) and every node: it allocates nothing for a valid selector.
  // An invalid requirement and an unmet one both make it false, so one pass checks both.
  const { matchLabels, matchExpressions } = selector;
  if (matchLabels) {
    for (const k in matchLabels) {
      if (!Object.hasOwn(matchLabels, k)) continue;
      if (labels === undefined || !Object.hasOwn(labels, k) || labels[k] !== matchLabels[k]) return false;
    }
  }
  if (matchExpressions) {
    for (let i = 0; i < matchExpressions.length; i++) {
      const r = matchExpressions[i] as LabelSelectorRequirement;
      if (requirementError(r, i) !== undefined || !requirementMatches(r, labels)) return false;
    }
  }
  return true;
}
