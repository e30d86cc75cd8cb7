/**
 * Before a restore: what changed since the rollback (a restore would overwrite it, so it refuses),
 * and, when asked to go ahead anyway or to finish an interrupted run, a backup of the work tree
 * as it is now, so that nothing is lost either way.
 *
 * @module
 */

import { headBranch, resolveCommit } from "../host/git.ts";
import { type Backup, type Manifest, writeBackup } from "./backup.ts";
import { readIndexEntries } from "./index_entries.ts";
import { copyIndex, same } from "./apply.ts";
import { compactStamp } from "../core/text.ts";
import { type RunInfo, toManifest } from "./operation.ts";
import { inTheWay, planPaths, type Targets, untrackedPaths } from "./plan.ts";
import { inScope, type Repo } from "./repo.ts";
import { changedPaths, treeFiles } from "./rollback_plan.ts";
import { ancestors, hashStates, type PathState, TreeReader } from "./worktree.ts";
import { joinPath } from "../core/path.ts";

/** Where a restore of `manifest` writes. */
export function targetsOfManifest(manifest: Manifest): Targets {
  const overwrite = new Set<string>();
  const clear = new Set<string>();
  const dirs = new Set<string>();
  for (const [path, state] of Object.entries(manifest.paths)) {
    if (state.kind === "dir") dirs.add(path);
    else overwrite.add(path);
    if (state.kind === "file" || state.kind === "symlink") clear.add(path);
  }
  for (const path of clear) for (const dir of ancestors(path)) dirs.add(dir);
  return { overwrite, clear, dirs };
}

/**
 * What changed since the rollback that made `backup`, and that a restore would overwrite: HEAD,
 * the index in the scope, tracked files (git's own diff), untracked files in the way. Empty when
 * the scope is exactly as the rollback left it.
 */
export async function changedSinceRollback(
  repo: Repo,
  backup: Backup,
  tmp: string,
): Promise<string[]> {
  const m = backup.manifest;
  if (m.after.kind !== "stable") {
    return [`everything (${backup.ref} was saved before a forced restore, not by a rollback)`];
  }
  const changes: string[] = [];
  const head = await resolveCommit(repo.top, "HEAD");
  if (m.move_head && head !== m.after.commit) {
    changes.push(
      `HEAD (now ${head?.slice(0, 12)}, the rollback left ${m.after.commit.slice(0, 12)})`,
    );
  }
  // As the rollback left it: the stable commit's entries (git keeps the skip-worktree and
  // assume-unchanged bits of entries it did not change; they are no work to lose).
  const expected = new Map(
    [...await treeFiles(repo, m.after.commit)].map(([path, v]) => [path, `${v} 0 -`]),
  );
  for (const e of await readIndexEntries(repo.top, repo.index)) {
    if (!inScope(repo, e.path) || e.mode === "160000") continue;
    const key = `${e.mode} ${e.oid} ${e.stage} ${e.intentToAdd ? "i" : "-"}`;
    if (expected.get(e.path) !== key) changes.push(`${e.path} (staged)`);
    expected.delete(e.path);
  }
  changes.push(...[...expected.keys()].map((path) => `${path} (removed from the index)`));
  changes.push(...await changedPaths(repo, { indexFile: repo.index }));
  changes.push(...await untrackedInTheWay(repo, m, tmp));
  return [...new Set(changes)];
}

/** Untracked files a restore would overwrite, unless they are what it would write anyway. */
async function untrackedInTheWay(repo: Repo, m: Manifest, tmp: string): Promise<string[]> {
  const targets = targetsOfManifest(m);
  const found = (await untrackedPaths(repo, repo.index)).filter((p) =>
    inTheWay(p.replace(/\/$/, ""), targets)
  );
  const reader = new TreeReader(repo.top);
  const states = new Map<string, PathState>();
  for (const path of found.filter((p) => !p.endsWith("/"))) {
    states.set(path, await reader.state(path));
  }
  await hashStates(repo.top, states, { write: false, tmp: joinPath(tmp, "check") });
  return found.filter((path) => {
    const saved = m.paths[path];
    const now = states.get(path);
    return !(saved && now && same(saved, now));
  }).map((path) => `${path} (untracked)`);
}

/** Saves what a restore of `backup` will overwrite, as it is now. Returns the new backup's ref. */
export async function saveBeforeRestore(
  repo: Repo,
  backup: Backup,
  { run, tmp }: { run: RunInfo; tmp: string },
): Promise<string> {
  const m = backup.manifest;
  const indexCopy = joinPath(tmp, "current.index");
  await copyIndex(repo, indexCopy);
  const states = await planPaths(repo, {
    candidates: new Set(Object.keys(m.paths)),
    targets: targetsOfManifest(m),
    indexFile: indexCopy,
  });
  await hashStates(repo.top, states, { write: true, tmp: joinPath(tmp, "links") });
  const head = await resolveCommit(repo.top, "HEAD");
  const known = new Set((await readIndexEntries(repo.top, indexCopy)).map((e) => e.oid));
  const manifest = toManifest(states, known, {
    task: `before restoring ${backup.ref.split("/").pop()}`,
    created: run.now,
    scope: m.scope,
    pre_head: head ?? m.pre_head,
    head_ref: await headBranch(repo.top),
    worktree: repo.worktree,
    move_head: m.move_head,
    after: { kind: "restore", backup: backup.ref },
  });
  return await writeBackup(repo, manifest, {
    name: `before-restore-${compactStamp(run.now)}`,
    indexCopy,
    tmp,
  });
}

/** Whether HEAD, the index in the scope and every saved path are exactly as `backup` holds them. */
export async function asSaved(
  repo: Repo,
  { manifest }: Backup,
  { savedIndex, tmp }: { savedIndex: string; tmp: string },
): Promise<boolean> {
  if (await resolveCommit(repo.top, "HEAD") !== manifest.pre_head) return false;
  const reader = new TreeReader(repo.top);
  const now = new Map<string, PathState>();
  for (const path of Object.keys(manifest.paths)) now.set(path, await reader.state(path));
  await hashStates(repo.top, now, { write: false, tmp: joinPath(tmp, "as-saved") });
  for (const [path, saved] of Object.entries(manifest.paths)) {
    const current = now.get(path)!;
    if (!same(saved, current)) return false;
    if (saved.kind === "file" && current.kind === "file" && saved.mode !== current.mode) {
      return false;
    }
    if (saved.kind === "dir" && current.kind === "dir" && saved.mode !== current.mode) return false;
  }
  const inScopeOf = async (file: string) =>
    JSON.stringify((await readIndexEntries(repo.top, file)).filter((e) => inScope(repo, e.path)));
  return await inScopeOf(savedIndex) === await inScopeOf(repo.index);
}
