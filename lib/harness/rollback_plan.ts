/**
 * What a rollback would do: the commit it goes to, the tracked paths it reverts or deletes, the
 * untracked and ignored files in its way, and the state now of each path its backup must hold.
 * Everything here only reads; the refusals it throws come before any change.
 *
 * @module
 */

import {
  dirtySubmodules,
  git,
  isAncestor,
  operationInProgress,
  resolveCommit,
} from "../host/git.ts";
import { readIndexEntries } from "./index_entries.ts";
import {
  planPaths,
  refuseIndexStates,
  refuseLargeFiles,
  refuseUndecodable,
  targetsOf,
} from "./plan.ts";
import { inScope, RefusedError, type Repo, scopePathspecs } from "./repo.ts";
import { type PathState, TreeReader } from "./worktree.ts";

/** A commit to roll back to, and what named it. */
export interface StableCommit {
  commit: string;
  name: string;
}

/**
 * The stable mark `fail handle --success` sets: a per-work-tree ref, so agents in two work trees
 * of one repository each keep their own.
 */
export const STABLE_REF = "refs/worktree/lifeline/stable";

/** The mark older versions set, shared by every work tree: read when a work tree has none. */
const SHARED_STABLE_REF = "refs/lifeline/stable";

/**
 * The commit to roll back to: this work tree's stable mark (or the shared one of older versions),
 * else the newest tag matching `pattern` that is an ancestor of `head` (a newer tag on another
 * branch is passed over). A mark off the branch is returned all the same: it is refused, not
 * passed over, since it says which commit the user meant.
 */
export async function findStable(
  top: string,
  pattern: string,
  head: string,
): Promise<StableCommit | null> {
  for (const name of [STABLE_REF, SHARED_STABLE_REF]) {
    const commit = await resolveCommit(top, name);
    if (commit) return { commit, name };
  }
  const tags = (await git(top, ["tag", "--list", pattern, "--sort=-creatordate"])).split("\n")
    .filter(Boolean);
  let newest: StableCommit | null = null;
  for (const tag of tags) {
    const commit = await resolveCommit(top, `refs/tags/${tag}`);
    if (!commit) continue;
    if (await isAncestor(top, commit, head)) return { commit, name: tag };
    newest ??= { commit, name: tag };
  }
  return newest;
}

/** Refuses while a merge, rebase, cherry-pick or revert runs, or a submodule has changes. */
export async function refuseOperations(repo: Repo): Promise<void> {
  const operation = await operationInProgress(repo.top);
  if (operation) throw new RefusedError(`${operation} is in progress`, "finish or abort it first");
  const dirty = await dirtySubmodules(repo.top, scopePathspecs(repo));
  if (dirty.length > 0) {
    throw new RefusedError(
      `submodule ${dirty.join(", ")} has changes of its own`,
      "commit or stash inside the submodule first; lifeline does not reset submodules",
    );
  }
}

/** Where a rollback starts and where it goes. */
export interface RollbackTarget {
  head: string;
  stable: StableCommit;
}

/** The refusals that need no index: no commits, no stable commit, or one off the branch. */
export async function checkTarget(repo: Repo, tagPattern: string): Promise<RollbackTarget> {
  await refuseOperations(repo);
  const head = await resolveCommit(repo.top, "HEAD");
  if (!head) throw new RefusedError("the repository has no commits yet");
  const stable = await findStable(repo.top, tagPattern, head);
  if (!stable) {
    throw new RefusedError(
      `there is no stable commit (no ${STABLE_REF}, no tag matching "${tagPattern}")`,
      "mark one with `git tag stable-1 <commit>`, or record a success with " +
        "`lifeline fail handle --success --task <task> --skill <skill>`",
    );
  }
  if (!(await isAncestor(repo.top, stable.commit, head))) {
    throw new RefusedError(
      `the stable commit ${stable.commit.slice(0, 12)} (${stable.name}) is not an ancestor of HEAD`,
      "a reset there would drop commits that are not on this branch; move the stable mark",
    );
  }
  return { head, stable };
}

/** A commit's files (not submodules) in the scope: path → "mode oid". */
export async function treeFiles(repo: Repo, commit: string): Promise<Map<string, string>> {
  const out = await git(repo.top, ["ls-tree", "-r", "-z", "--full-tree", commit]);
  const files = new Map<string, string>();
  for (const record of out.split("\0")) {
    const match = /^(\d{6}) (\w+) (\w+)\t(.*)$/s.exec(record);
    if (match && match[2] === "blob" && inScope(repo, match[4]!)) {
      files.set(match[4]!, `${match[1]} ${match[3]}`);
    }
  }
  return files;
}

/**
 * Tracked paths in the scope whose work tree content differs, by git's own diff (filters
 * applied), from the index in `indexFile`, or from `commit` when given.
 */
export async function changedPaths(
  repo: Repo,
  { indexFile, commit }: { indexFile: string; commit?: string },
): Promise<string[]> {
  const out = await git(repo.top, [
    "--no-optional-locks",
    "diff",
    "--name-only",
    "-z",
    "--no-renames",
    "--ignore-submodules=all",
    ...(commit ? [commit] : []),
    "--",
    ...scopePathspecs(repo),
  ], { env: { GIT_INDEX_FILE: indexFile } });
  return out.split("\0").filter(Boolean);
}

/** What a rollback would do, and the paths its backup holds (their states, not yet hashed). */
export interface RollbackPlan extends RollbackTarget {
  /** The project root relative to the top ("" for the whole repository). */
  scope: string;
  moveHead: boolean;
  states: Map<string, PathState>;
  /** Paths whose content goes back to the stable commit's (tracked now, or missing). */
  reverts: string[];
  /** Tracked paths the stable commit does not have: deleted. */
  deletes: string[];
  /** Untracked or ignored files in the way: overwritten or deleted. */
  untracked: string[];
  /** Object ids of content git holds already (staged or in the stable commit). */
  known: Set<string>;
  /** Paths the work tree gets the stable commit's file or link at. */
  writes: string[];
  /** Index entries marked skip-worktree (sparse checkout): the mark stays on them. */
  skipWorktree: string[];
}

/** Plans a rollback from the index in `indexFile`. Throws {@linkcode RefusedError}. */
export async function planFor(
  repo: Repo,
  target: RollbackTarget,
  { indexFile, maxFileBytes }: { indexFile: string; maxFileBytes: number },
): Promise<RollbackPlan> {
  const entries = await readIndexEntries(repo.top, indexFile);
  const reader = new TreeReader(repo.top);
  refuseIndexStates(repo, entries);
  const scoped = entries.filter((e) => e.mode !== "160000" && inScope(repo, e.path));
  const stable = await treeFiles(repo, target.stable.commit);
  refuseUndecodable(stable.keys());
  const tracked = new Set(scoped.map((e) => e.path));
  // Entries a sparse checkout keeps out of the work tree: only their index entries go back.
  const sparse = new Set<string>();
  for (const e of scoped) {
    if (e.skipWorktree && (await reader.state(e.path)).kind === "absent") sparse.add(e.path);
  }
  // What the work tree holds that the stable commit does not, by git's own diff (filters
  // applied): only those paths change, and only they are saved and hashed. git's diff trusts
  // assume-unchanged entries without looking, so their files are rewritten whatever they hold.
  const changed = await changedPaths(repo, { indexFile, commit: target.stable.commit });
  const assumed = scoped.filter((e) => e.assumeUnchanged).map((e) => e.path);
  const writes = [...new Set([...changed, ...assumed])]
    .filter((p) => stable.has(p) && !sparse.has(p)).sort();
  const removed = [...tracked].filter((p) => !stable.has(p) && !sparse.has(p)).sort();
  const states = await planPaths(repo, {
    candidates: new Set([...writes, ...removed]),
    targets: targetsOf(writes, removed),
    indexFile,
  });
  await refuseLargeFiles(repo, states, maxFileBytes);
  const isFile = (p: string) => ["file", "symlink"].includes(states.get(p)?.kind ?? "");
  const untracked = [...states.keys()].filter((p) => !tracked.has(p) && isFile(p)).sort();
  return {
    ...target,
    scope: repo.prefix,
    moveHead: repo.prefix === "",
    states,
    reverts: writes.filter((p) => !untracked.includes(p)),
    deletes: removed,
    untracked,
    known: new Set([
      ...scoped.map((e) => e.oid),
      ...[...stable.values()].map((v) => v.split(" ")[1]!),
    ]),
    writes,
    skipWorktree: scoped.filter((e) => e.skipWorktree).map((e) => e.path),
  };
}
