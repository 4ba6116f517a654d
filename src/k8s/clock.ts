// Clocks, as k8s.io/utils/clock serves client-go (https://github.com/kubernetes/utils/blob/master/clock/clock.go).
// Durations (timeouts, deadlines, expiry, backoff) use the monotonic clock, which a wall-clock step (NTP, a VM
// resumed) cannot move; wall time is only for timestamps written to objects (a Lease's renewTime, an Event's time),
// as client-go's clock.RealClock callers do.

/** Milliseconds. Injectable for tests. */
export type Clock = () => number;

/** Milliseconds on the process's monotonic clock (performance.now). */
export const monotonic: Clock = () => performance.now();
