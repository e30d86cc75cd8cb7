/**
 * The work tree's half of a rollback: the paths it writes get the stable commit's files, the paths
 * it removes go, and nothing else is touched. Another process (an agent) may be writing any of them
 * at that very moment, so each path changes in one atomic step that keeps what was there: a rename
 * into the run's directory, or a hard link there just before a rename over the path. Every byte
 * written to it up to that instant is in the kept copy, which is then compared with what the backup
 * saved; what was written since is saved into the backup before the next path changes. When the
 * run's directory is on another file system, the path is compared just before it changes instead.
 *
 * @module
 */

import { ancestors, lstatOrNull, type PathState, removePath, TreeReader } from "./worktree.ts";
import { baseName, dirName, joinPath } from "../core/path.ts";
import type { Repo } from "./repo.ts";

/** Paths that now hold something other than what the backup saved, and where to read them. */
export type Resave = (
  found: Map<string, PathState>,
  fileOf: (path: string) => string,
) => Promise<void>;

/** What a rollback does to the work tree. */
export interface WorktreeSteps {
  /** Paths that get the file or link staged for them (in `stage`, at the same relative path). */
  writes: string[];
  /** Paths removed (a directory with everything in it). */
  removals: string[];
}

/**
 * The steps of a rollback that writes `writes` and deletes the tracked `deletes`, given the
 * states its backup saved: a directory where a file goes, and a file or link where a directory
 * must be, go first.
 */
export function rollbackSteps(
  states: Map<string, PathState>,
  { writes, deletes }: { writes: string[]; deletes: string[] },
): WorktreeSteps {
  const isFile = (path: string) => ["file", "symlink"].includes(states.get(path)?.kind ?? "");
  const removals = new Set(deletes.filter(isFile));
  for (const path of writes) {
    if (states.get(path)?.kind === "dir") removals.add(path);
    for (const dir of ancestors(path)) if (isFile(dir)) removals.add(dir);
  }
  return { writes, removals: [...removals] };
}

const depth = (path: string) => path.split("/").length;

/** Carries out `steps`; `states` are what the backup holds, kept up to date as `resave` saves. */
export async function swapWorktree(
  repo: Repo,
  steps: WorktreeSteps,
  { states, stage, tmp, resave }: {
    states: Map<string, PathState>;
    stage: string;
    tmp: string;
    resave: Resave;
  },
): Promise<void> {
  const aside = joinPath(tmp, "aside");
  await Deno.mkdir(aside, { recursive: true });
  const sameDevice = (await Deno.stat(repo.top)).dev === (await Deno.stat(aside)).dev;
  let n = 0;
  /** Saves what changed at `path` since it was saved; `at` is where that content is now. */
  const keep = async (path: string, at: string) => {
    const found = await statesAt(at, path);
    const late = new Map([...found].filter(([p, s]) => !unchanged(states.get(p), s)));
    if (late.size === 0) return;
    await resave(late, (p) => at + p.slice(path.length));
    for (const [p, s] of late) states.set(p, s);
  };
  for (const path of [...steps.removals].sort((a, b) => depth(b) - depth(a))) {
    const full = joinPath(repo.top, path);
    if (sameDevice) {
      const to = joinPath(aside, String(n++));
      if (await moved(() => Deno.rename(full, to))) await keep(path, to);
    } else if (await lstatOrNull(full)) {
      await keep(path, full);
      await removePath(full);
    }
  }
  for (const path of [...steps.writes].sort((a, b) => depth(a) - depth(b))) {
    const full = joinPath(repo.top, path);
    for (const dir of ancestors(path)) {
      if (!(await lstatOrNull(joinPath(repo.top, dir)))) await Deno.mkdir(joinPath(repo.top, dir));
    }
    const staged = joinPath(stage, path);
    if (sameDevice) {
      const to = joinPath(aside, String(n++));
      const linked = await moved(() => Deno.link(full, to));
      await Deno.rename(staged, full);
      if (linked) await keep(path, to);
    } else {
      if (await lstatOrNull(full)) await keep(path, full);
      await moveAcross(staged, full);
    }
  }
  // Directories the removals left empty go too, as git's own checkout does.
  const emptied = new Set(steps.removals.flatMap((path) => ancestors(path)));
  const below = repo.prefix ? depth(repo.prefix) : 0;
  for (const dir of [...emptied].sort((a, b) => depth(b) - depth(a))) {
    const full = joinPath(repo.top, dir);
    if (depth(dir) <= below || !(await lstatOrNull(full))?.isDirectory) continue;
    await Deno.remove(full).catch(() => {}); // kept when something is in it
  }
}

/** True when what is found is what was saved (a file or link not written since). */
function unchanged(saved: PathState | undefined, now: PathState): boolean {
  if (!saved || saved.kind !== now.kind) return false;
  if (saved.kind === "file" || saved.kind === "symlink") {
    return saved.stamp === (now as { stamp?: string }).stamp;
  }
  return true;
}

/** The states of what is at `at` (a whole directory), named as if it were at `path`. */
async function statesAt(at: string, path: string): Promise<Map<string, PathState>> {
  const reader = new TreeReader(dirName(at));
  const name = baseName(at);
  const found = new Map<string, PathState>([[path, await reader.state(name)]]);
  if (found.get(path)!.kind === "dir") {
    for (const [child, state] of (await reader.walk(name)).entries) {
      found.set(path + child.slice(name.length), state);
    }
  }
  return found;
}

/** Runs a rename or link; false when there was nothing at its source. */
async function moved(step: () => Promise<void>): Promise<boolean> {
  try {
    await step();
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Moves a staged file or link from another file system: copied beside `full`, then renamed. */
async function moveAcross(staged: string, full: string): Promise<void> {
  const temp = joinPath(dirName(full), `.lifeline-restore-${crypto.randomUUID().slice(0, 8)}.tmp`);
  try {
    const info = await Deno.lstat(staged);
    if (info.isSymlink) await Deno.symlink(await Deno.readLink(staged), temp);
    else await Deno.copyFile(staged, temp);
    await Deno.rename(temp, full);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}
