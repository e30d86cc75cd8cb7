/**
 * Backups and budgets over time: listing and pruning `refs/lifeline/backups/`, and the checks
 * `doctor` and `status` report (the global iteration budget, the bound on backup size).
 *
 * @module
 */

import type { Config } from "../state/config.ts";
import { repoTop } from "../host/git.ts";
import { type BackupSummary, deleteBackups, listBackups } from "./backup.ts";
import { peekState } from "./files.ts";
import { withEveryRepoLock } from "./journal.ts";
import { totalNewBytes } from "./operation.ts";
import { openRepo } from "./repo.ts";
import { bytesText, command } from "./wording.ts";

/** The backups of the repository holding `root`, and how much they add (null outside git). */
export async function backupReport(
  root: string,
  config: Config,
): Promise<{ backups: BackupSummary[]; newBytes: number; boundBytes: number } | null> {
  if (!(await repoTop(root))) return null;
  const backups = await listBackups(await openRepo(root));
  return {
    backups,
    newBytes: totalNewBytes(backups),
    boundBytes: config.breaker.maxBackupsMB * 2 ** 20,
  };
}

/** Which backups a prune removes: all but the newest `keep`, or those older than `olderThanMs`. */
export function selectPrune(
  backups: BackupSummary[],
  { keep, olderThanMs, now }: { keep: number | null; olderThanMs: number | null; now: number },
): BackupSummary[] {
  const newestFirst = [...backups].sort((a, b) => b.created - a.created);
  return newestFirst.filter((b, i) =>
    (keep !== null && i >= keep) || (olderThanMs !== null && now - b.created > olderThanMs)
  );
}

/** Deletes the selected backups (not those an interrupted run in any work tree still needs). */
export async function pruneBackups(
  root: string,
  options: { keep: number | null; olderThanMs: number | null; now: number; dryRun: boolean },
): Promise<{ removed: BackupSummary[]; kept: number }> {
  const repo = await openRepo(root);
  return await withEveryRepoLock(repo, async (pending) => {
    const backups = await listBackups(repo);
    const removed = selectPrune(backups, options).filter((b) => !pending.has(b.ref));
    if (!options.dryRun) await deleteBackups(repo, removed.map((b) => b.ref));
    return { removed, kept: backups.length - removed.length };
  });
}

/** One line of `doctor`. */
export interface HarnessCheck {
  name: string;
  status: "ok" | "warn" | "fail";
  message: string;
  fix?: string;
}

/** `doctor`'s checks of the loop harness: the iteration budget, and the backups' size. */
export async function harnessChecks(root: string, config: Config): Promise<HarnessCheck[]> {
  const checks: HarnessCheck[] = [];
  const state = await peekState(root).catch(() => null);
  if (state) {
    const { current_iteration: current, max_iterations: max } = state;
    checks.push({
      name: "harness",
      status: current >= max * 0.8 ? "warn" : "ok",
      message: `iteration budget ${current}/${max}${
        current >= max ? ": global breaker open, every task stops" : ""
      }`,
      fix: `reset it with \`${command("fail reset --global", null)}\` once the loop is sound`,
    });
  }
  const report = await backupReport(root, config).catch(() => null);
  if (report && report.backups.length > 0) {
    const over = report.newBytes >= report.boundBytes * 0.8;
    checks.push({
      name: "backups",
      status: over ? "warn" : "ok",
      message: `${report.backups.length} rollback backups add ${
        bytesText(report.newBytes)
      } (bound ${bytesText(report.boundBytes)}, breaker.maxBackupsMB)`,
      fix: "remove old ones: `lifeline fail prune --keep 5` (list them with `lifeline fail list`)",
    });
  }
  return checks;
}
