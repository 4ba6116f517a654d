// Binary search in a sorted array: Go's sort.Search (https://pkg.go.dev/sort#Search), which client-go's and the
// controllers' sorted lists use.

/** The first index of `list` whose element does not come before the one sought (`before` false), or list.length. */
export function lowerBound<T>(list: readonly T[], before: (x: T) => boolean): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(list[mid] as T)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
