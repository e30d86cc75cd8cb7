/**
 * A thin client over the real `git` program, with the few queries rollback needs.
 *
 * @module
 */

import { CliError } from "../core/cli.ts";
import { ProgramMissingError, runProgram } from "./process.ts";

/** git failed; the message carries its stderr. */
export class GitError extends CliError {
  override name = "GitError";
}

/** Options for {@linkcode git}: variables added to the environment, and bytes for stdin. */
export interface GitOptions {
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  /** Where stdout goes instead of memory (see `runProgram`). */
  stdoutTo?: WritableStream<Uint8Array>;
}

/** Runs `git <args>` in `cwd` and returns what it printed. Throws {@linkcode GitError}. */
export async function gitRun(cwd: string, args: string[], options: GitOptions = {}) {
  let result;
  try {
    result = await runProgram("git", [...KEEP_SHARED_INDEXES, ...args], { cwd, ...options });
  } catch (error) {
    if (error instanceof ProgramMissingError) throw new GitError("git is not installed");
    throw error;
  }
  if (!result.success) {
    throw new GitError(
      `git ${subcommand(args)} failed: ${result.stderr.trim() || `exit code ${result.code}`}`,
    );
  }
  return result;
}

/**
 * Given to every git call: lifeline writes temporary copies of a split index, and git deletes
 * shared index files older than `splitIndex.sharedIndexExpire` whenever it writes one. With an
 * expiry of "now", that deleted the shared index the real index still names (and with it the
 * index: staged work, intent-to-add entries).
 */
const KEEP_SHARED_INDEXES = ["-c", "splitIndex.sharedIndexExpire=never"];

/** The git command `args` run (past any `-c name=value`), for messages. */
function subcommand(args: string[]): string {
  let i = 0;
  while (args[i] === "-c") i += 2;
  return args[i] ?? "";
}

/** Runs `git <args>` in `cwd` and returns stdout (trailing newline removed). */
export async function git(cwd: string, args: string[], options: GitOptions = {}): Promise<string> {
  return (await gitRun(cwd, args, options)).stdout.replace(/\n$/, "");
}

/** The work tree's top directory, or null outside a repository. */
export async function repoTop(cwd: string): Promise<string | null> {
  try {
    return await git(cwd, ["rev-parse", "--show-toplevel"]);
  } catch {
    return null;
  }
}

/** The repository's git directory, absolute. */
export function gitDir(top: string): Promise<string> {
  return git(top, ["rev-parse", "--absolute-git-dir"]);
}

/** The branch HEAD points to (`refs/heads/…`), or null when it is detached. */
export async function headBranch(top: string): Promise<string | null> {
  return await git(top, ["symbolic-ref", "-q", "HEAD"]).catch(() => null);
}

/** The commit a revision names, or null. */
export async function resolveCommit(top: string, revision: string): Promise<string | null> {
  try {
    return await git(top, ["rev-parse", "--verify", "--quiet", `${revision}^{commit}`]);
  } catch {
    return null;
  }
}

/** A merge, rebase, cherry-pick or revert in progress, or null. */
export async function operationInProgress(top: string): Promise<string | null> {
  const dir = await gitDir(top);
  const markers: [string, string][] = [
    ["MERGE_HEAD", "a merge"],
    ["rebase-merge", "a rebase"],
    ["rebase-apply", "a rebase or am"],
    ["CHERRY_PICK_HEAD", "a cherry-pick"],
    ["REVERT_HEAD", "a revert"],
  ];
  for (const [name, what] of markers) {
    try {
      await Deno.lstat(`${dir}/${name}`);
      return what;
    } catch {
      // not in progress
    }
  }
  return null;
}

/**
 * Submodules with work of their own that a reset cannot save (modified content, untracked files),
 * among the paths `pathspecs` names (all by default). A submodule checked out at another commit
 * than the index records is not among them: its commits are in its own repository.
 */
export async function dirtySubmodules(top: string, pathspecs: string[] = []): Promise<string[]> {
  const status = await git(top, [
    "--no-optional-locks",
    "status",
    "--porcelain=v2",
    "--ignore-submodules=none",
    "--",
    ...pathspecs,
  ]);
  // v2 ordinary entries: "1 XY <sub> …"; <sub> is "S<c><m><u>" for a submodule, with C (new
  // commits), M (modified content) and U (untracked files), or "." where there is none.
  return status.split("\n")
    .filter((line) => /^[12] \S\S S.(M.|.U)/.test(line))
    .map((line) => line.split(" ").at(-1)!);
}

/** True when `ancestor` is an ancestor of (or the same as) `commit`. */
export async function isAncestor(top: string, ancestor: string, commit: string): Promise<boolean> {
  try {
    await git(top, ["merge-base", "--is-ancestor", ancestor, commit]);
    return true;
  } catch {
    return false;
  }
}
