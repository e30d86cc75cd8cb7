/**
 * Which paths an operation on the work tree (a rollback, a restore) may overwrite or delete, and
 * what is at each of them now: the content of its backup. Besides the paths git tracks, that
 * includes untracked and ignored files in the way (at a path the operation writes, where it needs
 * a directory, or inside a directory where it puts a file). What cannot be saved is refused here,
 * before anything changes.
 *
 * @module
 */

import { git } from "../host/git.ts";
import { joinPath } from "../core/path.ts";
import { inScope, RefusedError, type Repo, scopePathspecs } from "./repo.ts";
import { ancestors, namesGitDir, type PathState, TreeReader, undecodable } from "./worktree.ts";
import type { IndexEntry } from "./index_entries.ts";
import { bytesText } from "./wording.ts";

/** Where an operation writes. */
export interface Targets {
  /** Paths it writes as a file or link, or removes. */
  overwrite: Set<string>;
  /** Paths where it puts a file or link: a directory there is removed with its contents. */
  clear: Set<string>;
  /** Paths it needs as directories: a file there is removed. */
  dirs: Set<string>;
}

/** The targets of writing `files` (and removing nothing else). */
export function targetsOf(files: Iterable<string>, removed: Iterable<string> = []): Targets {
  const clear = new Set(files);
  const dirs = new Set([...clear].flatMap(ancestors));
  return { overwrite: new Set([...clear, ...removed]), clear, dirs };
}

/** True when an untracked path is in the way of the targets. */
export function inTheWay(path: string, t: Targets): boolean {
  return t.overwrite.has(path) || t.dirs.has(path) || ancestors(path).some((a) => t.clear.has(a));
}

/** Untracked files in the scope (ignored ones too), and nested repositories (ending in "/"). */
export async function untrackedPaths(repo: Repo, indexFile: string): Promise<string[]> {
  const out = await git(repo.top, ["ls-files", "--others", "-z", "--", ...scopePathspecs(repo)], {
    env: { GIT_INDEX_FILE: indexFile },
  });
  return out.split("\0").filter(Boolean);
}

/** Refuses index states a backup cannot hold, or that a reset would silently drop. */
export function refuseIndexStates(repo: Repo, entries: IndexEntry[]): void {
  const unmerged = [...new Set(entries.filter((e) => e.stage > 0).map((e) => e.path))];
  if (unmerged.length > 0) {
    throw new RefusedError(
      `the index has unmerged paths (a conflicted merge or stash pop): ${listed(unmerged)}`,
      "resolve them and `git add` them, or `git reset --merge`, first",
    );
  }
  refuseUndecodable(entries.filter((e) => inScope(repo, e.path)).map((e) => e.path));
}

/** Refuses names that are not UTF-8: lifeline would save them under another name. */
export function refuseUndecodable(paths: Iterable<string>): void {
  const bad = undecodable(paths);
  if (bad.length === 0) return;
  throw new RefusedError(
    `file names that are not UTF-8 cannot be saved exactly: ${listed(bad)}`,
    "rename them to UTF-8 names (or move them out of the project) first",
  );
}

/** A few paths, for a one-line message. */
export function listed(paths: string[], max = 3): string {
  const shown = paths.slice(0, max).join(", ");
  return paths.length > max ? `${shown} and ${paths.length - max} more` : shown;
}

/**
 * The state now of every path the operation may change: `candidates` (tracked paths it writes or
 * removes), the untracked files in the way of `targets`, everything inside directories in the
 * way, and the directories above them. Refuses nested repositories and special files in the way.
 */
export async function planPaths(
  repo: Repo,
  { candidates, targets, indexFile }: {
    candidates: Set<string>;
    targets: Targets;
    indexFile: string;
  },
): Promise<Map<string, PathState>> {
  const paths = new Set(candidates);
  const nested: string[] = [];
  for (const path of await untrackedPaths(repo, indexFile)) {
    const name = path.replace(/\/$/, "");
    if (!inTheWay(name, targets)) continue;
    if (path.endsWith("/")) nested.push(name);
    else paths.add(name);
  }
  refuseNested(nested);
  refuseUndecodable(paths);
  const reader = new TreeReader(repo.top);
  const states = new Map<string, PathState>();
  for (const path of paths) {
    const state = await reader.state(path);
    states.set(path, state);
    if (state.kind !== "dir") continue;
    const below = await reader.walk(path);
    if (below.nestedRepo) refuseNested([path]);
    refuseUndecodable(below.entries.map(([child]) => child));
    for (const [child, s] of below.entries) states.set(child, s);
  }
  const gitNamed = [...states.keys()].filter(namesGitDir);
  if (gitNamed.length > 0) {
    throw new RefusedError(
      `git cannot hold these names (.git in another case), so lifeline cannot save them: ${
        listed(gitNamed)
      }`,
      "rename them, or move them out of the project, first",
    );
  }
  const special = [...states].filter(([, s]) => s.kind === "special").map(([p]) => p);
  if (special.length > 0) {
    throw new RefusedError(
      `lifeline cannot save these (not files, links or directories): ${listed(special)}`,
      "move them out of the project first",
    );
  }
  await addParents(repo, reader, states);
  return states;
}

function refuseNested(paths: string[]): void {
  if (paths.length === 0) return;
  throw new RefusedError(
    `a nested git repository is in the way of the rollback: ${listed(paths)}`,
    "commit it as a submodule, or move it out of the project, first",
  );
}

/** Records the directories above each path (below the root), when they are directories or absent. */
async function addParents(repo: Repo, reader: TreeReader, states: Map<string, PathState>) {
  const depth = repo.prefix ? repo.prefix.split("/").length : 0;
  for (const path of [...states.keys()]) {
    for (const dir of ancestors(path).slice(depth)) {
      if (states.has(dir)) continue;
      const state = await reader.state(dir);
      if (state.kind === "dir" || state.kind === "absent") states.set(dir, state);
    }
  }
}

/**
 * Refuses files above `maxBytes` whose content git does not already hold: saving them would grow
 * the repository by their size on every rollback.
 */
export async function refuseLargeFiles(
  repo: Repo,
  states: Map<string, PathState>,
  maxBytes: number,
): Promise<void> {
  const large: string[] = [];
  for (const [path, state] of states) {
    if (state.kind !== "file" || state.size <= maxBytes) continue;
    const oid = await git(repo.top, [
      "hash-object",
      "--no-filters",
      "--",
      joinPath(repo.top, path),
    ]);
    const stored = await git(repo.top, ["cat-file", "-e", oid]).then(() => true, () => false);
    if (!stored) large.push(`${path} (${bytesText(state.size)})`);
  }
  if (large.length > 0) {
    throw new RefusedError(
      `files above breaker.maxBackupFileMB (${bytesText(maxBytes)}) would have to be saved: ${
        listed(large)
      }`,
      "move them out of the project, commit them, or raise breaker.maxBackupFileMB",
    );
  }
}
