/**
 * The long-running commands' own logs, in lifeline's state directory: `logs/watch.log` and
 * `logs/daemon.log`, one JSON object per line, what they did and why, for `lifeline logs`. They
 * are bounded: past {@linkcode MAX_LOG_BYTES} a log is renamed to `<name>.1` (the one before is
 * dropped) and starts afresh.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { stateDir } from "./layout.ts";
import { appendJsonLine, renameFile } from "./store.ts";

/** A log rotates past this size. */
export const MAX_LOG_BYTES = 5 << 20;

/** The logs there are, by the command that writes them. */
export type EventLogName = "watch" | "daemon";

/** Where a command's log is (and its previous one, `<path>.1`). */
export function eventLogPath(env: Readonly<Record<string, string>>, name: EventLogName): string {
  return joinPath(stateDir(env), "logs", `${name}.log`);
}

/**
 * Appends one record (`ts` first), rotating the log when it has grown past `maxBytes`. Two
 * writers that rotate at once lose at most the older half: a bounded log keeps the newest.
 */
export async function appendEvent(
  path: string,
  record: Record<string, unknown> & { ts: string },
  { root, maxBytes = MAX_LOG_BYTES }: { root: string; maxBytes?: number },
): Promise<void> {
  const size = await Deno.lstat(path).then((info) => info.size, () => 0);
  if (size > maxBytes) await renameFile(path, `${path}.1`, { root }).catch(() => {});
  await appendJsonLine(path, record, { root });
}

/**
 * A writer that keeps records in a log in the order given, without making its caller wait for
 * each write: `flush()` waits for them all. A record that cannot be written is dropped (the log
 * is a record for people; the command goes on).
 */
export function eventSink(path: string, { root }: { root: string }) {
  let pending = Promise.resolve();
  return {
    keep(record: Record<string, unknown> & { ts: string }): void {
      pending = pending.then(() => appendEvent(path, record, { root })).catch(() => {});
    },
    flush: (): Promise<void> => pending,
  };
}
