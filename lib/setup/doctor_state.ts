/**
 * `doctor`'s checks of the project's state: corrupt or quarantined files, stale claim locks, and
 * the loop harness's budget and backups.
 *
 * @module
 */

import { joinPath, relativeTo } from "../core/path.ts";
import { harnessChecks } from "../harness/housekeeping.ts";
import { projectPaths } from "../state/layout.ts";
import { readStateText } from "../state/store.ts";
import { type DoctorCheck, fail, ok, warn } from "./check.ts";

/** Calls `visit` for each file below `dir`, `depth` levels of directories down. */
async function walkFiles(
  dir: string,
  depth: number,
  visit: (path: string, name: string) => Promise<void>,
): Promise<void> {
  try {
    for await (const entry of Deno.readDir(dir)) {
      const path = joinPath(dir, entry.name);
      if (entry.isDirectory && depth > 0) await walkFiles(path, depth - 1, visit);
      else if (entry.isFile) await visit(path, entry.name);
    }
  } catch {
    // missing: nothing to check
  }
}

/** Corrupt or quarantined state files. */
export const corruptCheck: DoctorCheck = {
  name: "corrupt",
  summary: "corrupt or quarantined state files",
  async run({ root }) {
    const quarantined: string[] = [];
    const corrupt: string[] = [];
    await walkFiles(projectPaths(root).sessions, 2, async (path, name) => {
      if (/\.corrupt-/.test(name)) quarantined.push(relativeTo(root, path));
      else if (/\.json$/.test(name)) {
        try {
          JSON.parse(await readStateText(path, { root }));
        } catch {
          corrupt.push(relativeTo(root, path));
        }
      }
    });
    if (corrupt.length > 0) {
      return [fail(
        "corrupt",
        `state files that do not parse: ${corrupt.join(", ")}`,
        "the next update moves them aside; or move them aside yourself",
      )];
    }
    if (quarantined.length > 0) {
      return [warn(
        "corrupt",
        `quarantined files (corrupt, moved aside): ${quarantined.join(", ")}`,
        "look at them, then delete them",
      )];
    }
    return [ok("corrupt", "no corrupt or quarantined state files")];
  },
};

/** Claim locks older than crash.claimStaleMinutes. */
export const claimsCheck: DoctorCheck = {
  name: "claims",
  summary: "stale claim locks",
  async run(facts) {
    const { config } = await facts.config();
    const { root, now } = facts;
    const stale: string[] = [];
    const limit = config.crash.claimStaleMinutes * 60_000;
    await walkFiles(projectPaths(root).claims, 4, async (path, name) => {
      if (!name.endsWith(".lock")) return;
      const mtime = (await Deno.stat(path)).mtime?.getTime() ?? now;
      if (now - mtime > limit) stale.push(relativeTo(root, path));
    });
    if (stale.length === 0) return [ok("claims", "no stale claim locks")];
    return [warn(
      "claims",
      `stale claim locks (older than ${config.crash.claimStaleMinutes} min): ${stale.join(", ")}`,
      "the next session start (hook crash) removes them unless their owner still runs",
    )];
  },
};

/** The loop harness's iteration budget and the rollback backups' size, when there are any. */
export const harnessCheck: DoctorCheck = {
  name: "harness",
  summary: "the loop harness's global iteration budget (fail handle stops every task at\n" +
    "max_iterations), when there is a harness; what rollback backups add to the\n" +
    "repository, against breaker.maxBackupsMB",
  run: async (facts) => await harnessChecks(facts.root, (await facts.config()).config),
};
