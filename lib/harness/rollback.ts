/**
 * Rolling a repository back to its stable commit without losing work (DESIGN §6,
 * spec/handle-failure.md Step 6), and putting the work back.
 *
 * Before any reset, the whole working tree (staged, unstaged and untracked files; not ignored
 * ones) is saved as a commit under `refs/lifeline/backups/<task>-<time>`, whose first parent is
 * the old HEAD and whose second parent holds the old index, like `git stash` does; `git gc` keeps
 * it because a ref points to it. `git clean` is never run, and lifeline's own state
 * (`.EnjoyHarness/`, `.trace/`, `sessions/`, `logs/`, `.lifeline/`) is never rolled back or
 * restored: tracked copies are set aside in the git directory and written back, so the record
 * of a rollback survives it. A run killed half-way leaves the set-aside copies, and the next run
 * puts them back first.
 *
 * @module
 */

import { CliError } from "../core/cli.ts";
import {
  dirtySubmodules,
  git,
  gitDir,
  isAncestor,
  operationInProgress,
  repoTop,
  resolveCommit,
} from "../host/git.ts";
import { dirName, joinPath } from "../core/path.ts";
import { withLock, writeFileAtomic } from "../state/store.ts";

/** lifeline's own state, relative to the project root: never rolled back or restored. */
export const OWN_STATE_DIRS = [".EnjoyHarness", ".trace", "sessions", "logs", ".lifeline"];

/** A rollback or restore that must not happen, and why. */
export class RefusedError extends CliError {
  override name = "RefusedError";
}

/** Where the repository is and where lifeline keeps its notes inside the git directory. */
interface Repo {
  top: string;
  /** The project root relative to `top` ("" when they are the same). */
  prefix: string;
  /** `<git dir>/lifeline`. */
  notes: string;
  /** The git directory: the root below which the notes are kept. */
  gitDir: string;
}

async function openRepo(root: string): Promise<Repo> {
  const top = await repoTop(root);
  if (!top) {
    throw new RefusedError(
      `${root} is not in a git repository, so there is nothing to roll back to`,
    );
  }
  const realRoot = await Deno.realPath(root);
  const realTop = await Deno.realPath(top);
  const prefix = realRoot === realTop ? "" : realRoot.slice(realTop.length + 1);
  const dir = await gitDir(realTop);
  const repo = { top: realTop, prefix, notes: joinPath(dir, "lifeline"), gitDir: dir };
  await withOwnStateLock(repo, () => recoverSetAside(repo));
  return repo;
}

/**
 * Puts back lifeline's own state that a rollback killed half-way left set aside. Commands that
 * read that state (`fail init`, `fail handle`) call this first: otherwise a harness that a
 * killed reset removed looks missing, and the copy that would restore it is never used.
 */
export async function recoverOwnState(root: string): Promise<void> {
  if (await repoTop(root)) await openRepo(root);
}

/**
 * Setting aside, the git operation and putting back run under one lock, and so does recovery:
 * a recovery between another run's set-aside and its reset would drop the set-aside copy just
 * before the reset deletes the originals. The lock lives in the git directory, which no
 * rollback touches (lifeline's own directories may vanish during one).
 */
function withOwnStateLock<T>(repo: Repo, fn: () => Promise<T>): Promise<T> {
  return withLock(joinPath(repo.notes, "own-state"), fn, { root: repo.gitDir, waitMs: 120_000 });
}

async function refuseUnsafe(repo: Repo, what: string): Promise<void> {
  const operation = await operationInProgress(repo.top);
  if (operation) {
    throw new RefusedError(
      `${what} refused: ${operation} is in progress`,
      "finish or abort it first",
    );
  }
  for (const dir of ownStatePaths(repo)) {
    if ((await Deno.lstat(joinPath(repo.top, dir)).catch(() => null))?.isSymlink) {
      throw new RefusedError(
        `${what} refused: ${dir} is a symbolic link, so lifeline cannot keep its state out of it`,
        `replace ${dir} with the directory it points to`,
      );
    }
  }
  const dirty = await dirtySubmodules(repo.top);
  if (dirty.length > 0) {
    throw new RefusedError(
      `${what} refused: submodule ${dirty.join(", ")} has changes of its own`,
      "commit or stash inside the submodule first; lifeline does not reset submodules",
    );
  }
}

function ownStatePaths(repo: Repo): string[] {
  return OWN_STATE_DIRS.map((dir) => (repo.prefix ? `${repo.prefix}/${dir}` : dir));
}

/**
 * The tree of the whole working tree: the index, plus every change and untracked file that is
 * not ignored, minus lifeline's own state. Built in a temporary index; the real one is untouched.
 */
export async function worktreeTree(repo: Repo): Promise<string> {
  await Deno.mkdir(repo.notes, { recursive: true });
  const index = joinPath(repo.notes, `index-${crypto.randomUUID().slice(0, 8)}`);
  const realIndex = joinPath(await gitDir(repo.top), "index");
  try {
    try {
      await Deno.copyFile(realIndex, index);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    const env = { GIT_INDEX_FILE: index }; // merged into the inherited environment
    await git(repo.top, ["add", "--all", "--", "."], { env });
    await git(repo.top, [
      "rm",
      "--cached",
      "-r",
      "--quiet",
      "--ignore-unmatch",
      "--",
      ...ownStatePaths(repo),
    ], { env });
    return await git(repo.top, ["write-tree"], { env });
  } finally {
    await Deno.remove(index).catch(() => {});
  }
}

/** What a backup holds, as recorded in its commit message. */
export interface BackupInfo {
  ref: string;
  commit: string;
  /** HEAD before the rollback. */
  preHead: string;
  /** The index before the rollback, as a tree. */
  indexTree: string;
  /** The working tree before the rollback, as a tree. */
  worktree: string;
  /** The commit rolled back to, and the working tree right after (to see later changes). */
  stable?: string;
  afterTree?: string;
}

function backupMessage(task: string, fields: Record<string, string>): string {
  return [
    `lifeline backup before rolling back (task ${task})`,
    "",
    ...Object.entries(fields).map(([key, value]) => `${key}: ${value}`),
    "",
    `Restore with: lifeline fail restore <this ref>`,
  ].join("\n");
}

/**
 * Who the backup commits are by. They are lifeline's snapshots, not the user's commits, and a
 * repository without a configured identity (a container, a CI machine) must still be backed up:
 * without this, `git commit-tree` fails there and the rollback with it.
 */
const SNAPSHOT_IDENTITY = {
  GIT_AUTHOR_NAME: "lifeline",
  GIT_AUTHOR_EMAIL: "lifeline@localhost",
  GIT_COMMITTER_NAME: "lifeline",
  GIT_COMMITTER_EMAIL: "lifeline@localhost",
};

/** Saves the complete working tree and index under a new `refs/lifeline/backups/` ref. */
async function saveBackup(repo: Repo, name: string): Promise<BackupInfo> {
  const preHead = await resolveCommit(repo.top, "HEAD");
  if (!preHead) throw new RefusedError("the repository has no commits yet");
  const indexTree = await git(repo.top, ["write-tree"]);
  const worktree = await worktreeTree(repo);
  const indexCommit = await git(repo.top, [
    "commit-tree",
    indexTree,
    "-p",
    preHead,
    "-m",
    `lifeline: index of ${name}`,
  ], { env: SNAPSHOT_IDENTITY });
  const commit = await git(repo.top, [
    "commit-tree",
    worktree,
    "-p",
    preHead,
    "-p",
    indexCommit,
    "-m",
    backupMessage(name, { pre_head: preHead, index_tree: indexTree, worktree }),
  ], { env: SNAPSHOT_IDENTITY });
  let ref = `refs/lifeline/backups/${name}`;
  for (let n = 2; await resolveCommit(repo.top, ref); n++) {
    ref = `refs/lifeline/backups/${name}-${n}`;
  }
  await git(repo.top, ["update-ref", ref, commit]);
  return { ref, commit, preHead, indexTree, worktree };
}

/** Every file under `dir` (relative paths), or none when it does not exist. */
async function filesUnder(dir: string, relative: string): Promise<string[]> {
  const files: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      const rel = `${relative}/${entry.name}`;
      if (entry.isDirectory) files.push(...await filesUnder(joinPath(dir, entry.name), rel));
      else if (entry.isFile) files.push(rel);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory)) {
      throw error;
    }
  }
  return files;
}

/**
 * Sets lifeline's own state aside before git touches the work tree. All of it, tracked or not:
 * a reset can delete tracked files, and a later read-tree can delete files the index knows.
 */
async function setAside(repo: Repo): Promise<void> {
  const aside = joinPath(repo.notes, "set-aside");
  await Deno.remove(aside, { recursive: true }).catch(() => {});
  let count = 0;
  for (const dir of ownStatePaths(repo)) {
    for (const file of await filesUnder(joinPath(repo.top, dir), dir)) {
      try {
        const data = await Deno.readFile(joinPath(repo.top, file));
        await Deno.mkdir(dirName(joinPath(aside, file)), { recursive: true });
        await Deno.writeFile(joinPath(aside, file), data);
        count++;
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    }
  }
  // The marker says the set-aside copy is complete; only then may a later run trust it.
  await writeFileAtomic(joinPath(repo.notes, "set-aside.complete"), `${count}\n`, {
    root: repo.gitDir,
  });
}

/** Writes set-aside state back (after a git operation, or after a run killed half-way). */
async function recoverSetAside(repo: Repo): Promise<void> {
  const aside = joinPath(repo.notes, "set-aside");
  const complete = joinPath(repo.notes, "set-aside.complete");
  try {
    await Deno.lstat(complete);
  } catch {
    await Deno.remove(aside, { recursive: true }).catch(() => {}); // never finished: the originals are intact
    return;
  }
  const walk = async (dir: string, relative: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = joinPath(dir, entry.name);
      const rel = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory) await walk(path, rel);
      else {
        await writeFileAtomic(joinPath(repo.top, rel), await Deno.readFile(path), {
          root: repo.top,
        });
      }
    }
  };
  try {
    await walk(aside, "");
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  await Deno.remove(complete);
  await Deno.remove(aside, { recursive: true }).catch(() => {});
}

/** Runs a git operation on the work tree with lifeline's own state kept out of it. */
async function keepingOwnState(repo: Repo, operation: () => Promise<void>): Promise<void> {
  await withOwnStateLock(repo, async () => {
    await setAside(repo);
    await operation();
    await recoverSetAside(repo);
  });
}

/** The commit to roll back to: `refs/lifeline/stable`, else the newest tag matching `pattern`. */
export async function findStable(
  top: string,
  pattern: string,
): Promise<{ commit: string; name: string } | null> {
  const stable = await resolveCommit(top, "refs/lifeline/stable");
  if (stable) return { commit: stable, name: "refs/lifeline/stable" };
  const tags = (await git(top, ["tag", "--list", pattern, "--sort=-creatordate"])).split("\n")
    .filter(Boolean);
  for (const tag of tags) {
    const commit = await resolveCommit(top, `refs/tags/${tag}`);
    if (commit) return { commit, name: tag };
  }
  return null;
}

/** What a rollback did. */
export interface RollbackResult {
  backup: BackupInfo;
  stable: { commit: string; name: string };
  restoreCommand: string;
}

function stamp(now: number): string {
  return new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/** Saves everything, then resets the work tree to the stable commit. Throws RefusedError. */
export async function rollBack(
  root: string,
  { task, now, tagPattern }: { task: string; now: number; tagPattern: string },
): Promise<RollbackResult> {
  const repo = await openRepo(root);
  await refuseUnsafe(repo, "rollback");
  const head = await resolveCommit(repo.top, "HEAD");
  if (!head) throw new RefusedError("rollback refused: the repository has no commits yet");
  const stable = await findStable(repo.top, tagPattern);
  if (!stable) {
    throw new RefusedError(
      `rollback refused: no stable commit (no refs/lifeline/stable, no tag matching "${tagPattern}")`,
      "mark one with `lifeline fail handle --success --task … --skill …` or `git tag stable-1 <commit>`",
    );
  }
  if (!(await isAncestor(repo.top, stable.commit, head))) {
    throw new RefusedError(
      `rollback refused: the stable commit ${
        stable.commit.slice(0, 12)
      } (${stable.name}) is not an ancestor of HEAD`,
      "a reset there would drop commits that are not on this branch; move the stable mark",
    );
  }
  const backup = await saveBackup(repo, `${task}-${stamp(now)}`);
  await keepingOwnState(repo, async () => {
    await git(repo.top, ["reset", "--quiet", "--hard", stable.commit]);
  });
  const afterTree = await worktreeTree(repo);
  const info = { ...backup, stable: stable.commit, afterTree };
  await writeFileAtomic(
    joinPath(repo.notes, "backups", `${backup.ref.split("/").pop()}.json`),
    JSON.stringify(info, null, 2) + "\n",
    { root: repo.gitDir },
  );
  return { backup: info, stable, restoreCommand: `lifeline fail restore ${backup.ref}` };
}

async function readBackup(repo: Repo, ref: string): Promise<BackupInfo> {
  const full = ref.startsWith("refs/") ? ref : `refs/lifeline/backups/${ref}`;
  const commit = await resolveCommit(repo.top, full);
  if (!commit) {
    throw new CliError(
      `no backup ${full}`,
      "list them with: git for-each-ref refs/lifeline/backups",
    );
  }
  const message = await git(repo.top, ["log", "-1", "--format=%B", commit]);
  const field = (key: string) => new RegExp(`^${key}: (\\S+)$`, "m").exec(message)?.[1];
  const preHead = field("pre_head");
  const indexTree = field("index_tree");
  const worktree = field("worktree");
  if (!preHead || !indexTree || !worktree) throw new CliError(`${full} is not a lifeline backup`);
  let after: Partial<BackupInfo> = {};
  try {
    after = JSON.parse(
      await Deno.readTextFile(joinPath(repo.notes, "backups", `${full.split("/").pop()}.json`)),
    );
  } catch {
    // No record of the state right after the rollback: only --force can restore.
  }
  return {
    ref: full,
    commit,
    preHead,
    indexTree,
    worktree,
    ...(after.stable ? { stable: after.stable } : {}),
    ...(after.afterTree ? { afterTree: after.afterTree } : {}),
  };
}

/** What a restore did. */
export interface RestoreResult {
  backup: BackupInfo;
  /** With --force over newer changes: where those were saved first. */
  savedFirst?: string;
}

/**
 * Puts a backup's working tree, index and HEAD back. Refuses when the tree changed since the
 * rollback (that work would be overwritten) unless `force`, which saves it first.
 */
export async function restoreBackup(
  root: string,
  ref: string,
  { force, now }: { force: boolean; now: number },
): Promise<RestoreResult> {
  const repo = await openRepo(root);
  await refuseUnsafe(repo, "restore");
  const backup = await readBackup(repo, ref);
  const head = await resolveCommit(repo.top, "HEAD");
  const unchanged = backup.stable !== undefined && head === backup.stable &&
    backup.afterTree === await worktreeTree(repo);
  let savedFirst: string | undefined;
  if (!unchanged) {
    if (!force) {
      throw new RefusedError(
        "restore refused: the work tree changed since the rollback, and restoring would overwrite it",
        `add --force to save the current tree first and restore anyway`,
      );
    }
    savedFirst = (await saveBackup(repo, `before-restore-${stamp(now)}`)).ref;
  }
  await keepingOwnState(repo, async () => {
    await git(repo.top, ["reset", "--quiet", "--hard", backup.preHead]);
    await git(repo.top, ["read-tree", "--reset", "-u", backup.worktree]);
    await git(repo.top, ["read-tree", backup.indexTree]);
  });
  return { backup, ...(savedFirst ? { savedFirst } : {}) };
}

/** Marks HEAD as the stable commit (`refs/lifeline/stable`), or does nothing outside git. */
export async function markStable(root: string): Promise<string | null> {
  const top = await repoTop(root);
  if (!top) return null;
  const head = await resolveCommit(top, "HEAD");
  if (!head) return null;
  await git(top, ["update-ref", "refs/lifeline/stable", head]);
  return head;
}
