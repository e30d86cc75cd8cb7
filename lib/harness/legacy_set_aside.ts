/**
 * One-time recovery for users upgrading from a lifeline that set its own state aside in
 * `<git dir>/lifeline/set-aside/` during a rollback: a run killed after the reset left the only
 * copy there. Only files that are missing now are put back; a file that exists is newer than the
 * copy (other sessions kept writing) and is left alone, and lock files are never written (a new
 * inode would stop them locking). Then the set-aside copy is removed.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { pathExists, writeFileAtomic } from "../state/store.ts";
import type { Repo } from "./repo.ts";

async function filesUnder(dir: string, relative: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const rel = relative ? `${relative}/${entry.name}` : entry.name;
    if (entry.isDirectory) files.push(...await filesUnder(joinPath(dir, entry.name), rel));
    else if (entry.isFile) files.push(rel);
  }
  return files;
}

/** True when an older version left a set-aside copy. */
export async function legacySetAsidePending(repo: Repo): Promise<boolean> {
  return await pathExists(joinPath(repo.notes, "set-aside")) ||
    await pathExists(joinPath(repo.notes, "set-aside.complete"));
}

/** Puts back what an older version left set aside. Returns the paths put back (from the top). */
export async function recoverLegacySetAside(repo: Repo): Promise<string[]> {
  const aside = joinPath(repo.notes, "set-aside");
  const complete = joinPath(repo.notes, "set-aside.complete");
  if (!(await legacySetAsidePending(repo))) return [];
  const restored: string[] = [];
  // Without the marker the copy was never finished, and the originals were never touched.
  if (await pathExists(complete) && await pathExists(aside)) {
    for (const rel of await filesUnder(aside, "")) {
      const target = joinPath(repo.top, rel);
      if (rel.endsWith(".lock") || await pathExists(target)) continue;
      await writeFileAtomic(target, await Deno.readFile(joinPath(aside, rel)), { root: repo.top });
      restored.push(rel);
    }
  }
  await Deno.remove(aside, { recursive: true }).catch(() => {});
  await Deno.remove(complete).catch(() => {});
  return restored;
}
