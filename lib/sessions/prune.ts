/**
 * Pruning: finished sessions (ended, or scavenged with the handoff delivered) that have been idle
 * for longer than `stale.pruneAfterDays` are deleted, so that thousands of old session directories
 * do not slow every command that walks them. A live session is never pruned: the judgement is made
 * again under the session's registry lock, the lock its heartbeat hook takes to bring a session
 * back to life, and a session whose transcript was written within the prune age is kept too.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { uniqueSuffix } from "../core/text.ts";
import { projectPaths, sessionPaths } from "../state/layout.ts";
import { removeDir, renameFile, withLock } from "../state/store.ts";
import { assessSession } from "./liveness.ts";
import { readSessionRecord } from "./registry.ts";
import { PRUNING_MARK } from "./session_list.ts";

/** Settings of a prune. */
export interface PruneOptions {
  now: number;
  staleAfterSeconds: number;
  pruneAfterSeconds: number;
  waitMs: number;
}

/**
 * Deletes one session's directory if it is still finished and idle past the limit; returns
 * whether it did. The directory is first renamed to a name no lister takes for a session, so
 * nobody sees it half deleted; a pruner that stops midway leaves that name, for
 * {@linkcode removeLeftover}.
 *
 * Deleting the directory deletes its `.lock` files, which locks otherwise never are: a heartbeat
 * that opened the old lock file while the rename ran finds its session gone and records it anew
 * in a fresh directory, which is what a session coming back after a week should get.
 */
export async function pruneSession(
  root: string,
  id: string,
  options: PruneOptions,
): Promise<boolean> {
  const paths = sessionPaths(root, id);
  const trash = joinPath(
    projectPaths(root).sessions,
    `${id}${PRUNING_MARK}${uniqueSuffix()}`,
  );
  const moved = await withLock(paths.session, async () => {
    const again = await assessSession(root, id, { ...options, panes: new Map() });
    if (!again.actions.some((action) => action.kind === "prune")) return false;
    if (await transcriptWritten(root, id, options)) return false;
    await renameFile(paths.dir, trash, { root });
    return true;
  }, { root, waitMs: options.waitMs });
  if (moved) await removeDir(trash, { root });
  return moved;
}

/**
 * Whether the session's transcript was written within the prune age: the client writes it while
 * the session runs, so a session resumed (`--resume`, the same id) but not yet seen by its hooks
 * shows there that it is not finished.
 */
async function transcriptWritten(
  root: string,
  id: string,
  { now, pruneAfterSeconds }: PruneOptions,
): Promise<boolean> {
  const transcript = (await readSessionRecord(root, id))?.transcript_path;
  if (!transcript) return false;
  try {
    const mtime = (await Deno.lstat(transcript)).mtime?.getTime();
    return mtime !== undefined && now - mtime <= pruneAfterSeconds * 1000;
  } catch {
    return false; // gone: nothing says the session runs
  }
}

/** Finishes deleting a directory an interrupted prune left (a name from `listSessions`). */
export async function removeLeftover(root: string, name: string): Promise<void> {
  if (!name.includes(PRUNING_MARK)) throw new Error(`Not a pruned session directory: ${name}`);
  await removeDir(joinPath(projectPaths(root).sessions, name), { root });
}
