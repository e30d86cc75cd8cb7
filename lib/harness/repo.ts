/**
 * The repository a rollback works on, and its scope: the project root's subtree, minus lifeline's
 * own state. Every git step names the scope with pathspecs, so git itself leaves the rest alone:
 * paths outside the root, and `sessions/`, `logs/`, `.lifeline/`, `.claims/`, `.EnjoyHarness/`
 * and `.trace/` under it (the record of the failure, and other sessions' live state).
 *
 * @module
 */

import { CliError } from "../core/cli.ts";
import { absolutePath, joinPath, relativeTo } from "../core/path.ts";
import { git, repoTop } from "../host/git.ts";

/** lifeline's own state, relative to the project root: never staged, reset, copied or restored. */
export const OWN_STATE_DIRS = [
  "sessions",
  "logs",
  ".lifeline",
  ".claims",
  ".EnjoyHarness",
  ".trace",
] as const;

/** A rollback or restore that must not happen, and why. Counted like any other failure. */
export class RefusedError extends CliError {
  override name = "RefusedError";
}

/** What git exports to the hooks it runs, and what lifeline then cannot work with. */
const GIT_COMMAND_VARIABLES = ["GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE"] as const;

/** The variable that shows lifeline runs inside a git command (a hook), or null. */
export function insideGitCommand(env: Readonly<Record<string, string>>): string | null {
  return GIT_COMMAND_VARIABLES.find((name) => env[name] !== undefined) ?? null;
}

/**
 * The refusal for a run inside a git command: git holds the index meanwhile (`git commit -a`
 * even points GIT_INDEX_FILE at its own `index.lock` and discards what else was written).
 */
export function refusedInsideGit(variable: string): RefusedError {
  return new RefusedError(
    `${variable} is set: lifeline runs inside a git command (a hook), which holds the index ` +
      "meanwhile, so it does not roll back or restore",
    "run it after the git command has finished, not from its hook",
  );
}

/** Where the repository is, and which part of it is the project. */
export interface Repo {
  /** The work tree's top directory (a real path). */
  top: string;
  /** The project root relative to `top`, with "/" separators; "" when they are the same. */
  prefix: string;
  /** This work tree's git directory, and the directory shared by all work trees (refs). */
  gitDir: string;
  commonDir: string;
  /** This work tree among the repository's: its git dir relative to the common one ("" for the main one). */
  worktree: string;
  /** The index file. */
  index: string;
  /** `<git dir>/lifeline`: the journal, the lock, records of backups, temporary files. */
  notes: string;
}

/** Opens the repository that holds `root`. Throws {@linkcode RefusedError} outside one. */
export async function openRepo(root: string): Promise<Repo> {
  const found = await repoTop(root);
  if (!found) {
    throw new RefusedError(`${root} is not in a git repository, so there is nothing to roll back`);
  }
  const top = await Deno.realPath(found);
  const realRoot = await Deno.realPath(root);
  // A backslash is a separator only on Windows; elsewhere it is part of a name (`a\b`).
  const relative = realRoot === top ? "" : realRoot.slice(top.length + 1);
  const prefix = Deno.build.os === "windows" ? relative.replaceAll("\\", "/") : relative;
  const [gitDir, commonDir, index] = (await git(top, [
    "rev-parse",
    "--absolute-git-dir",
    "--git-common-dir",
    "--git-path",
    "index",
  ])).split("\n").map((path) => absolutePath(path, top));
  return {
    top,
    prefix,
    gitDir: gitDir!,
    commonDir: commonDir!,
    worktree: gitDir === commonDir ? "" : relativeTo(commonDir!, gitDir!),
    index: index!,
    notes: joinPath(gitDir!, "lifeline"),
  };
}

/** A path relative to the top, for a path relative to the root. */
export function topPath(repo: Repo, rootRelative: string): string {
  return repo.prefix ? `${repo.prefix}/${rootRelative}` : rootRelative;
}

/** The pathspecs of the scope: the root, minus lifeline's own state. Literal, from the top. */
export function scopePathspecs(repo: Repo): string[] {
  return [
    repo.prefix ? `:(top,literal)${repo.prefix}` : ":(top)",
    ...OWN_STATE_DIRS.map((dir) => `:(top,literal,exclude)${topPath(repo, dir)}`),
  ];
}

/** True when `path` (relative to the top) is in the scope. */
export function inScope(repo: Repo, path: string): boolean {
  let rest = path;
  if (repo.prefix) {
    if (!path.startsWith(repo.prefix + "/")) return false;
    rest = path.slice(repo.prefix.length + 1);
  }
  const first = rest.split("/", 1)[0]!;
  return !(OWN_STATE_DIRS as readonly string[]).includes(first) && first !== ".git";
}

/** What the scope is, for messages: "the repository" or "packages/a/". */
export function scopeName(repo: Repo): string {
  return repo.prefix ? `${repo.prefix}/` : "the repository";
}
