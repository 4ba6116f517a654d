// Error helpers of the controller shell, as controller-runtime's client.IgnoreNotFound
// (https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/client/interfaces.go) and apimachinery's
// utilerrors.NewAggregate (https://github.com/kubernetes/apimachinery/blob/master/pkg/util/errors/errors.go).
import { isNotFound } from '../../src/k8s/errors.ts';

/**
 * `err`, or undefined when it is a NotFound: the object is gone, which for a delete or patch of a pod or revision
 * means there is nothing left to do. Use: `errors.push(ignoreNotFound(err))`, or `if (ignoreNotFound(err)) throw err`.
 */
export function ignoreNotFound(err: unknown): unknown {
  return isNotFound(err) ? undefined : err;
}

/** The errors among `errs` (undefined entries are no error), as one AggregateError; undefined when there is none. */
export function newAggregate(errs: readonly unknown[], context: string): AggregateError | undefined {
  const real = errs.filter((e) => e !== undefined);
  if (real.length === 0) return undefined;
  return new AggregateError(real, `${context} had ${real.length} error(s): ${real.map(errorMessage).join('; ')}`);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
