/**
 * The one lister of `sessions/`: every command that walks the sessions of a project gets them from
 * here, with the directory names validated once. An entry that is not a session directory
 * lifeline could have made (a file, a symlink, `old loop/`) is reported as skipped, never touched.
 *
 * Synchronous on purpose: a project may hold tens of thousands of session directories, and for
 * many small file operations the sync calls are several times faster than async ones.
 *
 * @module
 */

import { projectPaths, validateName } from "../state/layout.ts";
import { openRegularFileSync } from "../state/store.ts";

/** An entry of `sessions/` that is not a session. */
export interface SkippedEntry {
  name: string;
  reason: string;
}

/** What {@linkcode listSessions} found. */
export interface SessionListing {
  /** Valid session ids, sorted. */
  ids: string[];
  /** Entries that are not sessions, with why. */
  skipped: SkippedEntry[];
  /** Directories a pruner was deleting when it stopped (see `prune.ts`). */
  pruning: string[];
}

/** Names the pruner gives a session directory while it deletes it (see `prune.ts`). */
export const PRUNING_MARK = "~pruning-";

/** The sessions under `root` (none when `sessions/` is missing or unreadable). */
export function listSessions(root: string): SessionListing {
  const ids: string[] = [];
  const skipped: SkippedEntry[] = [];
  const pruning: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(projectPaths(root).sessions)];
  } catch {
    return { ids, skipped, pruning };
  }
  for (const entry of entries) {
    if (entry.name.includes(PRUNING_MARK)) {
      if (entry.isDirectory) pruning.push(entry.name);
      continue;
    }
    if (!entry.isDirectory) {
      skipped.push({ name: entry.name, reason: entry.isSymlink ? "a symlink" : "not a directory" });
      continue;
    }
    try {
      ids.push(validateName("session id", entry.name));
    } catch (error) {
      skipped.push({ name: entry.name, reason: (error as Error).message });
    }
  }
  return { ids: ids.sort(), skipped, pruning };
}

/**
 * The first `maxBytes` of a small file (a status word, a heartbeat), or undefined when it is
 * missing or not a regular file. The read is bounded, a symlink is refused, and the file is opened
 * so that a FIFO swapped in after the check can neither block the open nor be read (see the
 * store's `openRegularFileSync`): a loop over every session cannot be stalled by one of them.
 */
export function readSmallFileSync(path: string, maxBytes = 256): string | undefined {
  try {
    const { file, size } = openRegularFileSync(path);
    try {
      const buffer = new Uint8Array(Math.min(maxBytes, size));
      const n = buffer.length === 0 ? 0 : file.readSync(buffer) ?? 0;
      return new TextDecoder().decode(buffer.subarray(0, n));
    } finally {
      file.close();
    }
  } catch {
    return undefined;
  }
}

/** Whether a regular file (not a symlink) is at `path`. */
export function isFileSync(path: string): boolean {
  try {
    return Deno.lstatSync(path).isFile;
  } catch {
    return false;
  }
}
