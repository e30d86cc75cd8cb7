/**
 * The steps that change the work tree, the index and HEAD. Each is idempotent given its backup's
 * manifest, so a run killed anywhere is finished by running the same steps again. The caller
 * holds the repository lock and git's `index.lock`; the new index is built in a temporary file and
 * renamed over the real one, as git itself does.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { git, gitRun, headBranch, resolveCommit } from "../host/git.ts";
import type { Manifest, SavedState } from "./backup.ts";
import { readIndexEntries, replaceEntries } from "./index_entries.ts";
import { type Journal, writeJournal } from "./journal.ts";
import type { RollbackPlan } from "./rollback_plan.ts";
import { type Resave, rollbackSteps, swapWorktree } from "./swap.ts";
import { inScope, RefusedError, type Repo, scopePathspecs } from "./repo.ts";
import {
  bytesFill,
  hashStates,
  type PathState,
  putFile,
  readBlobs,
  removePath,
  TreeReader,
} from "./worktree.ts";

/** Copies the index file (none is fine: git then starts from an empty one). */
export async function copyIndex(repo: Repo, to: string): Promise<void> {
  try {
    await Deno.copyFile(repo.index, to);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/**
 * Moves HEAD (its branch, when it has one) to `to`, if it is at one of `from`; does nothing when
 * it is there already. Compare-and-swap, so a commit made meanwhile is never dropped.
 */
export async function moveHead(
  repo: Repo,
  journal: Journal,
  { from, to }: { from: string[]; to: string },
): Promise<void> {
  const current = await resolveCommit(repo.top, "HEAD");
  if (current === to) return;
  if (!current || !from.includes(current)) {
    throw new RefusedError(
      `HEAD moved meanwhile (it is at ${current?.slice(0, 12) ?? "nothing"})`,
      "lifeline does not move a branch that somebody else moved",
    );
  }
  const branch = await headBranch(repo.top);
  const lock = branch ? joinPath(repo.commonDir, `${branch}.lock`) : `${repo.gitDir}/HEAD.lock`;
  // Through a symbolic HEAD, git also takes `HEAD.lock` (and leaves it empty): a kill leaves it
  // too, which the next run must know to remove.
  journal.refLocks = [
    { path: lock, content: `${to}\n` },
    ...(branch ? [{ path: `${repo.gitDir}/HEAD.lock`, content: "" }] : []),
  ];
  await writeJournal(repo, journal);
  await git(repo.top, ["update-ref", "-m", `lifeline: ${journal.op}`, "HEAD", to, current]);
}

/** The stable commit's index and files, made in `tmp` before the project changes. */
export interface Staged {
  /** The index to install (the current one with the scope's entries at the stable commit). */
  index: string;
  /** A tree of the stable files the rollback writes, as git checks them out. */
  stage: string;
}

/**
 * Builds, in `tmp` and nowhere else, what a rollback installs: the index (git's `restore
 * --staged`, sparse entries included) and the stable files it writes. Nothing in the project
 * changes here, so a failure (a full disk, a filter that fails) is one that changed nothing.
 */
export async function stageRollback(
  repo: Repo,
  { manifest, plan, tmp }: {
    manifest: Manifest;
    plan: Pick<RollbackPlan, "writes">;
    tmp: string;
  },
): Promise<Staged> {
  if (manifest.after.kind !== "stable") throw new Error("not a rollback's backup");
  const stable = manifest.after.commit;
  const index = joinPath(tmp, "rollback.index");
  await copyIndex(repo, index);
  const env = { GIT_INDEX_FILE: index };
  const scope = scopePathspecs(repo);
  // git refuses a pathspec that matches nothing: a root that neither commit nor index has.
  const tracked = await git(repo.top, ["ls-files", "-z", "--", ...scope], { env }) !== "" ||
    await git(repo.top, ["ls-tree", "--name-only", stable, "--", repo.prefix || "."]) !== "";
  if (tracked) {
    await git(repo.top, [
      "restore",
      "--no-recurse-submodules",
      "--ignore-skip-worktree-bits",
      `--source=${stable}`,
      "--staged",
      "--",
      ...scope,
    ], { env });
  }
  // The stable files, as git checks them out (filters, line endings, modes), in a tree of their
  // own: the attributes git applies are then the stable commit's (from the index, or as written
  // there), as with `git reset --hard`, never the ones HEAD left in the real work tree.
  const stage = joinPath(tmp, "stage");
  await Deno.mkdir(stage, { recursive: true });
  if (plan.writes.length > 0) {
    await git(repo.top, [...await filtersFromTop(repo), "checkout-index", "-z", "--stdin"], {
      env: { ...env, GIT_WORK_TREE: stage },
      stdin: plan.writes.map((path) => path + "\0").join(""),
    });
  }
  return { index, stage };
}

/**
 * git runs a filter's command in the top of the work tree it checks out into: here the stage, where
 * a command named relative to the project (`./tools/smudge.sh`) is not. Each configured smudge and
 * process command is given (`-c`) to run from the project's top instead, as it does in a checkout
 * there.
 */
async function filtersFromTop(repo: Repo): Promise<string[]> {
  const listed = await git(repo.top, [
    "config",
    "-z",
    "--get-regexp",
    String.raw`^filter\..*\.(smudge|process)$`,
  ]).catch(() => ""); // none configured: git exits 1
  const top = `'${repo.top.replaceAll("'", `'\\''`)}'`;
  return listed.split("\0").filter(Boolean).flatMap((entry) => {
    const at = entry.indexOf("\n");
    if (at < 0) return [];
    return ["-c", `${entry.slice(0, at)}=cd ${top} && ${entry.slice(at + 1)}`];
  });
}

/**
 * Rolls the scope back to the stable commit: the index and the files `stageRollback` made (made
 * again when a killed run is finished), the work tree's planned paths (`swap.ts`, which saves
 * what an agent writes meanwhile through `resave`), and HEAD at the top.
 */
export async function applyRollback(
  repo: Repo,
  journal: Journal,
  { manifest, plan, resave, tmp, staged }: {
    manifest: Manifest;
    plan: Pick<RollbackPlan, "states" | "writes" | "deletes" | "skipWorktree">;
    resave: Resave;
    tmp: string;
    staged?: Staged;
  },
): Promise<void> {
  if (manifest.after.kind !== "stable") throw new Error("not a rollback's backup");
  const stable = manifest.after.commit;
  const { index: next, stage } = staged ?? await stageRollback(repo, { manifest, plan, tmp });
  const env = { GIT_INDEX_FILE: next };
  await swapWorktree(repo, rollbackSteps(plan.states, plan), {
    states: plan.states,
    stage,
    tmp,
    resave,
  });
  const sparse = new Set(plan.skipWorktree);
  const kept = (await readIndexEntries(repo.top, next)).filter((e) => sparse.has(e.path));
  if (kept.length > 0) {
    await git(repo.top, ["update-index", "--skip-worktree", "-z", "--stdin"], {
      env,
      stdin: kept.map((e) => e.path + "\0").join(""),
    });
  }
  // The stat data of the files just written, as a checkout leaves it (-q: others may differ).
  await git(repo.top, ["update-index", "-q", "--refresh", "--ignore-submodules"], { env });
  if (manifest.move_head) await moveHead(repo, journal, { from: [manifest.pre_head], to: stable });
  await Deno.rename(next, repo.index);
}

/** Puts back a backup: the work tree's saved paths, the index in the scope, and HEAD. */
export async function applyRestore(
  repo: Repo,
  journal: Journal,
  { manifest, savedIndex, headFrom, tmp }: {
    manifest: Manifest;
    savedIndex: string;
    headFrom: string[];
    tmp: string;
  },
): Promise<void> {
  await restoreWorktree(repo, manifest, tmp);
  const next = await composeIndex(repo, savedIndex, tmp);
  if (manifest.move_head) {
    await moveHead(repo, journal, { from: headFrom, to: manifest.pre_head });
  }
  await Deno.rename(next, repo.index);
}

/**
 * The index to install: the current one (so what others staged outside the scope meanwhile
 * stays), with the scope's entries replaced by the saved ones, flags included. Their stat data is
 * left empty on purpose: it described files that are rewritten now, and git compares stat data
 * coarsely (whole seconds, a reused inode), so stale data could pass a changed file as clean.
 */
async function composeIndex(repo: Repo, savedIndex: string, tmp: string): Promise<string> {
  const next = joinPath(tmp, "restore.index");
  const saved = await readIndexEntries(repo.top, savedIndex);
  const current = await readIndexEntries(repo.top, repo.index);
  await copyIndex(repo, next);
  await replaceEntries(repo.top, next, {
    replace: current.filter((e) => inScope(repo, e.path)).map((e) => e.path),
    entries: saved.filter((e) => inScope(repo, e.path)),
    scratch: joinPath(tmp, "intent-to-add"),
  });
  return next;
}

/** True when what is at a path now is its saved state (mode aside: a chmod is no conflict). */
export function same(saved: SavedState, now: PathState): boolean {
  if (saved.kind !== now.kind) return false;
  if (saved.kind === "file" && now.kind === "file") return saved.oid === now.oid;
  if (saved.kind === "symlink" && now.kind === "symlink") return saved.target === now.target;
  return true;
}

const depth = (path: string) => path.split("/").length;

/** The work tree's saved paths as they were: removals deepest first, then writes, then modes. */
async function restoreWorktree(repo: Repo, manifest: Manifest, tmp: string): Promise<void> {
  const reader = new TreeReader(repo.top);
  const now = new Map<string, PathState>();
  for (const path of Object.keys(manifest.paths)) now.set(path, await reader.state(path));
  await hashStates(repo.top, now, { write: false, tmp: joinPath(tmp, "links") });
  const deepest = [...now.keys()].sort((a, b) => depth(b) - depth(a) || (a < b ? -1 : 1));
  for (const path of deepest) {
    const saved = manifest.paths[path]!;
    const current = now.get(path)!;
    if (same(saved, current) || !mustRemove(saved, current)) continue;
    await removePath(joinPath(repo.top, path));
    now.set(path, { kind: "absent" });
  }
  await writeSaved(repo, manifest, { now, shallowest: [...deepest].reverse(), tmp });
  for (const path of deepest) {
    const saved = manifest.paths[path]!;
    const full = joinPath(repo.top, path);
    if (saved.kind === "dir") await Deno.chmod(full, saved.mode);
    if (saved.kind === "absent" && now.get(path)!.kind === "dir") {
      await Deno.remove(full).catch(() => {}); // kept when something else is in it now
    }
  }
}

/**
 * Whether what is there must go before the saved state can be written. A directory the rollback
 * created is emptied path by path and removed at the end; a file is replaced by a rename.
 */
function mustRemove(saved: SavedState, current: PathState): boolean {
  if (current.kind === "absent") return false;
  if (current.kind === "dir") return saved.kind === "file" || saved.kind === "symlink";
  return saved.kind !== "file";
}

/** Bytes of file content read from git at a time, so a large backup does not fill memory. */
const CHUNK_BYTES = 16 << 20;
/** Files at least this large go from git to disk as a stream, never whole in memory. */
const STREAM_BYTES = 4 << 20;

/** Creates the saved directories and links (shallow first), then writes the saved files. */
async function writeSaved(
  repo: Repo,
  manifest: Manifest,
  { now, shallowest, tmp }: { now: Map<string, PathState>; shallowest: string[]; tmp: string },
): Promise<void> {
  const files: [string, Extract<SavedState, { kind: "file" }>][] = [];
  for (const path of shallowest) {
    const saved = manifest.paths[path]!;
    const current = now.get(path)!;
    const full = joinPath(repo.top, path);
    if (saved.kind === "dir" && current.kind !== "dir") await Deno.mkdir(full);
    if (saved.kind === "symlink" && !same(saved, current)) await Deno.symlink(saved.target, full);
    if (saved.kind !== "file") continue;
    if (same(saved, current)) {
      if (current.kind === "file" && current.mode !== saved.mode) {
        await Deno.chmod(full, saved.mode);
      }
    } else if (saved.size >= STREAM_BYTES) {
      await putFile(full, saved.mode, {
        tmp,
        fill: (out) => gitRun(repo.top, ["cat-file", "blob", saved.oid], { stdoutTo: out }).then(),
      });
    } else files.push([path, saved]);
  }
  for (let start = 0; start < files.length;) {
    let end = start;
    for (let bytes = 0; end < files.length && (end === start || bytes < CHUNK_BYTES); end++) {
      bytes += files[end]![1].size;
    }
    const chunk = files.slice(start, end);
    const blobs = await readBlobs(repo.top, chunk.map(([, s]) => s.oid));
    for (const [path, saved] of chunk) {
      await putFile(joinPath(repo.top, path), saved.mode, {
        tmp,
        fill: bytesFill(blobs.get(saved.oid)!),
      });
    }
    start = end;
  }
}
