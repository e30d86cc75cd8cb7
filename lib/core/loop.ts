/**
 * The loop of a long-running command (the watcher, the daemon): one round, then a pause, until
 * the command is stopped; or one round only.
 *
 * @module
 */

import { sleep } from "./sleep.ts";

/**
 * Runs `tick`, then waits `waitMs()` (cut short when `signal` aborts), until `signal` aborts; with
 * `once`, runs it once. An error from `tick` ends the loop: the caller says what went wrong.
 */
export async function repeat(
  { signal, once, tick, waitMs }: {
    signal: AbortSignal;
    once: boolean;
    tick: () => Promise<void>;
    waitMs: () => number;
  },
): Promise<void> {
  while (!signal.aborted) {
    await tick();
    if (once) return;
    await sleep(waitMs(), signal);
  }
}
