/**
 * Waiting that a signal can cut short, for watchers and daemons that must stop at once on
 * SIGINT or SIGTERM.
 *
 * @module
 */

/** The longest delay a timer takes (2^31 - 1 ms, ~24.8 days); a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Resolves after `ms` (at most {@linkcode MAX_TIMER_MS}), or as soon as `signal` aborts. Never
 * rejects.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted || !(ms > 0)) return Promise.resolve();
  ms = Math.min(ms, MAX_TIMER_MS);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
