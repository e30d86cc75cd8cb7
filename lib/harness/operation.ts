/**
 * What a rollback and a restore share: running under the journal and git's index lock, turning
 * hashed path states into a backup manifest, and getting a backup's index file back out of git.
 *
 * @module
 */

import { CliError } from "../core/cli.ts";
import { joinPath } from "../core/path.ts";
import { git, GitError } from "../host/git.ts";
import { readIndexEntries } from "./index_entries.ts";
import type { Backup, Manifest, SavedState } from "./backup.ts";
import {
  clearJournal,
  type Journal,
  releaseIndexLock,
  takeIndexLock,
  tmpDir,
  writeJournal,
} from "./journal.ts";
import { RefusedError, type Repo } from "./repo.ts";
import { type PathState, readBlobs } from "./worktree.ts";

/** Who runs, and when: the journal names the run; backup names and dates come from `now`. */
export interface RunInfo {
  now: number;
  pid: number;
}

/** The git steps failed; the repository was put back as it was (`undone`), or could not be. */
export class OperationFailedError extends CliError {
  override name = "OperationFailedError";
  constructor(message: string, readonly backup: string, readonly undone: boolean) {
    super(
      message,
      undone
        ? `nothing changed; the backup ${backup} is kept`
        : `the next \`lifeline fail handle\` or \`lifeline fail restore ${backup}\` finishes it`,
    );
  }
}

/**
 * Runs `fn` under a journal and git's `index.lock`. The journal stays behind only when the
 * operation is decided (its `backup` set) and did not finish: the next run finishes it.
 */
export async function runJournaled<T>(
  repo: Repo,
  { op, run, backup }: { op: Journal["op"]; run: RunInfo; backup: string | null },
  fn: (journal: Journal, tmp: string) => Promise<T>,
): Promise<T> {
  const nonce = crypto.randomUUID();
  const journal: Journal = {
    version: 1,
    op,
    pid: run.pid,
    started: run.now,
    step: "prepare",
    nonce,
    backup,
    refLocks: [],
  };
  const tmp = tmpDir(repo, nonce);
  await Deno.mkdir(tmp, { recursive: true });
  await writeJournal(repo, journal);
  let finished = false;
  try {
    await takeIndexLock(repo, nonce);
    const result = await fn(journal, tmp);
    finished = true;
    return result;
  } catch (error) {
    finished = journal.backup === null ||
      (error instanceof OperationFailedError && error.undone);
    throw error;
  } finally {
    await releaseIndexLock(repo, nonce);
    if (finished) await clearJournal(repo);
  }
}

/** Marks the operation decided: from here on, a run that dies is finished by the next one. */
export async function startApplying(repo: Repo, journal: Journal, backup: string): Promise<void> {
  journal.step = "apply";
  journal.backup = backup;
  await writeJournal(repo, journal);
}

/** A hashed path state as the manifest records it; null for what cannot be saved. */
export function saved(path: string, state: PathState): SavedState | null {
  switch (state.kind) {
    case "file":
    case "symlink":
      if (!state.oid) throw new Error(`${path} was not hashed`);
      return state.kind === "file"
        ? { kind: "file", mode: state.mode, size: state.size, oid: state.oid }
        : { kind: "symlink", target: state.target, oid: state.oid };
    case "dir":
      return { kind: "dir", mode: state.mode };
    case "absent":
      return { kind: "absent" };
    case "special":
      return null;
  }
}

/** The manifest of hashed states; `known` are the objects git held before (not new bytes). */
export function toManifest(
  states: Map<string, PathState>,
  known: Set<string>,
  meta: Omit<Manifest, "version" | "paths" | "files" | "bytes" | "new_bytes">,
): Manifest {
  const paths: Record<string, SavedState> = {};
  for (const [path, state] of [...states].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const s = saved(path, state);
    if (s) paths[path] = s;
  }
  return { version: 2, ...meta, paths, ...totals(paths, known) };
}

/** How many files and bytes `paths` hold, and how many of those bytes git did not hold before. */
export function totals(
  paths: Record<string, SavedState>,
  known: Set<string>,
): Pick<Manifest, "files" | "bytes" | "new_bytes"> {
  let files = 0, bytes = 0, fresh = 0;
  for (const s of Object.values(paths)) {
    if (s.kind !== "file" && s.kind !== "symlink") continue;
    const size = s.kind === "file" ? s.size : new TextEncoder().encode(s.target).length;
    files++;
    bytes += size;
    if (!known.has(s.oid)) fresh += size;
  }
  return { files, bytes, new_bytes: fresh };
}

/**
 * The backup's index file, written to `tmp` (an empty index when there was none), and read once
 * to be sure it can be, before a restore changes anything. (An older backup of a split index can
 * name a shared index git has deleted since.)
 */
export async function savedIndexFile(repo: Repo, backup: Backup, tmp: string): Promise<string> {
  const file = joinPath(tmp, "saved.index");
  if (!backup.indexBlob) {
    await git(repo.top, ["read-tree", "--empty"], { env: { GIT_INDEX_FILE: file } });
    return file;
  }
  const blobs = await readBlobs(repo.top, [backup.indexBlob]);
  await Deno.writeFile(file, blobs.get(backup.indexBlob)!);
  try {
    await readIndexEntries(repo.top, file);
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    throw new RefusedError(
      `the index saved in ${backup.ref} cannot be read: ${error.message}`,
      `its files are in the commit: git restore --source=${backup.ref} --worktree -- <paths>`,
    );
  }
  return file;
}

/** Every backup's `new_bytes`, summed: what lifeline's backups add to the repository. */
export function totalNewBytes(backups: { new_bytes: number | null }[]): number {
  return backups.reduce((sum, b) => sum + (b.new_bytes ?? 0), 0);
}
