/**
 * The project's recovery log, `logs/error-recovery.log` (spec/error-recovery.md, "Output"): one
 * JSON line per recovery action, with when, which session or pane, what kind of trouble, what was
 * done to what, and how it went.
 *
 * @module
 */

import { projectPaths } from "./layout.ts";
import { appendJsonLine } from "./store.ts";

/** One action, as the hooks log it. */
export interface RecoveryRecord {
  ts: string;
  session?: string;
  pane?: string;
  kind: string;
  action: string;
  target: string;
  result: string;
  [field: string]: unknown;
}

/** Appends records to the root's recovery log (one write each). */
export async function logRecovery(root: string, ...records: RecoveryRecord[]): Promise<void> {
  const path = projectPaths(root).recoveryLog;
  for (const record of records) await appendJsonLine(path, record, { root });
}
