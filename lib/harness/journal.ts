/**
 * Crash safety for the git steps of a rollback or a restore. One run at a time per repository
 * holds `<git dir>/lifeline/repo.lock` (a kernel lock, released when its holder dies), so a
 * journal found by the lock holder was left by a run that died. The journal names the operation,
 * its backup and the step it reached; the next run (or `fail restore`) finishes it.
 *
 * While it changes the work tree, a run holds git's own `index.lock`, so no other git command
 * writes the index meanwhile; the lock file holds the run's nonce, so a lock left by a killed
 * run is recognised as lifeline's and removed, and anybody else's is never touched.
 *
 * @module
 */

import * as z from "zod";
import { joinPath } from "../core/path.ts";
import { sleep } from "../core/sleep.ts";
import { lazy } from "../core/lazy.ts";
import { jsonCodec, readState, withLock, writeFileAtomic } from "../state/store.ts";
import { RefusedError, type Repo } from "./repo.ts";

/** What a run was doing. */
export interface Journal {
  version: 1;
  op: "rollback" | "restore";
  pid: number;
  /** Epoch ms. */
  started: number;
  /** Where it was: `prepare` (saving what it will change) or `apply` (the git steps). */
  step: "prepare" | "apply";
  /** The content of the `index.lock` this run created. */
  nonce: string;
  /**
   * The backup whose manifest describes the operation, once it is decided: from then on, a run
   * that finds the journal finishes the operation.
   */
  backup: string | null;
  /** Ref lock files a step may leave, with the content git writes into them. */
  refLocks: { path: string; content: string }[];
}

const journalSchema = lazy(() =>
  z.object({
    version: z.literal(1),
    op: z.enum(["rollback", "restore"]),
    pid: z.number(),
    started: z.number(),
    step: z.enum(["prepare", "apply"]),
    nonce: z.string(),
    backup: z.nullable(z.string()),
    refLocks: z.array(z.object({ path: z.string(), content: z.string() })),
  })
);

const journalCodec = jsonCodec<Journal>((value) => journalSchema().parse(value));

const journalPath = (repo: Repo) => joinPath(repo.notes, "journal.json");

/** This run's temporary directory (under the notes, so it is on the same file system). */
export const tmpDir = (repo: Repo, nonce: string) => joinPath(repo.notes, "tmp", nonce);

/** Runs `fn` as the one lifeline run working on this repository. */
export async function withRepoLock<T>(repo: Repo, fn: () => Promise<T>): Promise<T> {
  await Deno.mkdir(repo.notes, { recursive: true });
  return await withLock(joinPath(repo.notes, "repo"), fn, { root: repo.gitDir, waitMs: 120_000 });
}

/**
 * Runs `fn` as the one lifeline run in every work tree of the repository (each has its own lock
 * and journal; backups are shared), with the backups their journals still need. Locks are taken in
 * one order, so two such runs never wait for each other.
 */
export async function withEveryRepoLock<T>(
  repo: Repo,
  fn: (pending: Set<string>) => Promise<T>,
): Promise<T> {
  const gitDirs = [repo.commonDir];
  try {
    for await (const entry of Deno.readDir(joinPath(repo.commonDir, "worktrees"))) {
      if (entry.isDirectory) gitDirs.push(joinPath(repo.commonDir, "worktrees", entry.name));
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const trees: Repo[] = [];
  for (const gitDir of gitDirs.sort()) {
    const notes = joinPath(gitDir, "lifeline");
    // A work tree where lifeline never ran has no journal, and no lock to take.
    if (gitDir === repo.gitDir || await Deno.lstat(notes).then(() => true, () => false)) {
      trees.push({ ...repo, gitDir, notes });
    }
  }
  const pending = new Set<string>();
  const lockFrom = async (i: number): Promise<T> => {
    if (i === trees.length) return await fn(pending);
    return await withRepoLock(trees[i]!, async () => {
      const backup = (await readJournal(trees[i]!))?.backup;
      if (backup) pending.add(backup);
      return await lockFrom(i + 1);
    });
  };
  return await lockFrom(0);
}

/** The journal a dead run left, or null. Call with the repository lock held. */
export async function readJournal(repo: Repo): Promise<Journal | null> {
  const read = await readState(journalPath(repo), journalCodec, { root: repo.gitDir });
  if (read.kind === "ok") return read.value;
  if (read.kind === "corrupt") {
    throw new RefusedError(
      `${journalPath(repo)} is not valid (${read.reason})`,
      "move it aside; lifeline then no longer knows which step an interrupted run reached",
    );
  }
  return null;
}

/** Records the journal (atomically). */
export function writeJournal(repo: Repo, journal: Journal): Promise<void> {
  return writeFileAtomic(journalPath(repo), journalCodec.format(journal), { root: repo.gitDir });
}

/** True when a journal file exists (cheap; no lock). */
export async function journalPending(repo: Repo): Promise<boolean> {
  return (await readState(journalPath(repo), journalCodec, { root: repo.gitDir })).kind !==
    "missing";
}

/** Removes the journal and the run's temporary files. */
export async function clearJournal(repo: Repo): Promise<void> {
  await Deno.remove(joinPath(repo.notes, "tmp"), { recursive: true }).catch(() => {});
  await Deno.remove(journalPath(repo)).catch(() => {});
}

const indexLockPath = (repo: Repo) => `${repo.index}.lock`;

/**
 * Takes git's `index.lock`: created exclusively, as git does, and holding `nonce` from the first
 * instant (a hard link to a file already written), so a run killed at any moment leaves a lock
 * that says whose it is. Waits up to `waitMs` for another git command to finish, then refuses.
 */
export async function takeIndexLock(repo: Repo, nonce: string, waitMs = 10_000): Promise<void> {
  const written = joinPath(tmpDir(repo, nonce), "index.lock");
  await Deno.mkdir(tmpDir(repo, nonce), { recursive: true });
  await Deno.writeTextFile(written, nonce);
  try {
    for (let waited = 0;; waited += 50) {
      try {
        return await Deno.link(written, indexLockPath(repo));
      } catch (error) {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
        if (waited >= waitMs) {
          throw new RefusedError(
            `another git command is using the repository (${indexLockPath(repo)} exists)`,
            "wait for it to finish; if no git command is running, remove that file",
          );
        }
        await sleep(50);
      }
    }
  } finally {
    await Deno.remove(written).catch(() => {});
  }
}

/** Removes `path` when it holds exactly `content`: a lock this run (or a dead one) created. */
async function removeIfOurs(path: string, content: string): Promise<boolean> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    return false;
  }
  if (text !== content) return false;
  await Deno.remove(path).catch(() => {});
  return true;
}

/** Releases the index lock this run took. */
export async function releaseIndexLock(repo: Repo, nonce: string): Promise<void> {
  await removeIfOurs(indexLockPath(repo), nonce);
}

/** Removes the locks a dead run left: its `index.lock`, and ref locks git left half-written. */
export async function removeStaleLocks(repo: Repo, journal: Journal): Promise<string[]> {
  const removed: string[] = [];
  if (await removeIfOurs(indexLockPath(repo), journal.nonce)) removed.push(indexLockPath(repo));
  for (const lock of journal.refLocks) {
    // git creates a ref lock empty, then writes it: a kill in between leaves it empty.
    if (await removeIfOurs(lock.path, lock.content) || await removeIfOurs(lock.path, "")) {
      removed.push(lock.path);
    }
  }
  return removed;
}
