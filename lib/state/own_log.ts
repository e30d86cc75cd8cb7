/**
 * lifeline's own log (`ownLogPath`): where hooks report what went wrong instead of printing it,
 * because anything a hook prints reaches the model. One JSON line per event.
 *
 * @module
 */

import { ownLogPath, stateDir } from "./layout.ts";
import { appendJsonLine, describeError } from "./store.ts";

/**
 * lifeline's own state directory (`stateDir`), created when missing, as the root for the store:
 * it may be reached through links, nothing below it may be one.
 */
export async function ownStateRoot(env: Readonly<Record<string, string>>): Promise<string> {
  const root = stateDir(env);
  await Deno.mkdir(root, { recursive: true });
  return root;
}

/** One line of lifeline's own log. */
export interface OwnLogRecord {
  ts: string;
  command: string;
  message: string;
  session?: string;
  root?: string;
}

/**
 * Appends one line to lifeline's own log. Never throws: when even this fails (an unwritable home,
 * say) there is nowhere left to report to, and a hook must still exit quietly.
 */
export async function logToOwnLog(
  env: Readonly<Record<string, string>>,
  record: Omit<OwnLogRecord, "ts"> & { ts?: string; error?: unknown },
): Promise<void> {
  const { error, ...rest } = record;
  const line: OwnLogRecord = {
    ts: record.ts ?? new Date().toISOString(),
    ...rest,
    message: error === undefined ? rest.message : `${rest.message}: ${describeError(error)}`,
  };
  try {
    await appendJsonLine(ownLogPath(env), line, { root: await ownStateRoot(env) });
  } catch {
    // Nothing else can be done; see above.
  }
}
