/**
 * Which project a command works on when no `--root` names one: the nearest directory at or above
 * the working directory that has `.claude/`, up to the git top level; else the git top level; else
 * the working directory. So `lifeline status` run in `src/` of a project reports the project, not
 * an empty `src/`. The home directory is never climbed into: `~/.claude` is Claude Code's own
 * configuration, and a home kept in git (dotfiles) is not a project.
 *
 * @module
 */

import { existingRoot } from "../core/cli.ts";
import { dirName, joinPath } from "../core/path.ts";

/** How a root was chosen. */
export type RootSource = "flag" | "harness" | "claude" | "git" | "cwd";

/** A command's project root, and how it was chosen. */
export interface ProjectRoot {
  root: string;
  source: RootSource;
}

async function isDirectory(path: string): Promise<boolean> {
  return await Deno.stat(path).then((info) => info.isDirectory, () => false);
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

/**
 * The root found from `cwd` (see the module doc). With `harness`, the nearest directory that
 * holds the failure handler's harness (`.EnjoyHarness/`) comes first: the loop's `fail` commands
 * work on the harness it made, and a rollback stays inside that root (a loop that set up its
 * harness in `packages/a` never rolls back the rest of the repository).
 */
export async function discoverRoot(
  cwd: string,
  env: Readonly<Record<string, string>>,
  { harness = false }: { harness?: boolean } = {},
): Promise<ProjectRoot> {
  const home = env.HOME || env.USERPROFILE || null;
  let claude: string | null = null;
  let found: string | null = null;
  let gitTop: string | null = null;
  for (let dir = cwd; dir !== home;) {
    if (harness && found === null && await isDirectory(joinPath(dir, ".EnjoyHarness"))) {
      found = dir;
    }
    if (claude === null && await isDirectory(joinPath(dir, ".claude"))) claude = dir;
    // `.git` is a directory at a repository's top, a file at a worktree's or a submodule's.
    if (await exists(joinPath(dir, ".git"))) {
      gitTop = dir;
      break;
    }
    const parent = dirName(dir);
    if (parent === dir) break;
    dir = parent;
  }
  if (found !== null) return { root: found, source: "harness" };
  if (claude !== null) return { root: claude, source: "claude" };
  return gitTop !== null ? { root: gitTop, source: "git" } : { root: cwd, source: "cwd" };
}

/**
 * `--root` when given (refused when it does not exist, see `existingRoot`), else the root found
 * from the working directory.
 */
export async function projectRoot(
  flag: string | undefined,
  { cwd, env }: { cwd: string; env: Readonly<Record<string, string>> },
  options: { harness?: boolean } = {},
): Promise<ProjectRoot> {
  if (flag !== undefined) return { root: await existingRoot(flag, cwd), source: "flag" };
  return await discoverRoot(await existingRoot(undefined, cwd), env, options);
}

const FOUND_BY: Record<Exclude<RootSource, "flag" | "cwd">, string> = {
  harness: "the nearest directory with the loop's harness, .EnjoyHarness/",
  claude: "the nearest directory with .claude/",
  git: "the git top level",
};

/**
 * How a root was found, in words, when it is not the obvious one (given with `--root`, or the
 * working directory itself); null otherwise.
 */
export function rootSource(found: ProjectRoot, cwd: string): string | null {
  if (found.source === "flag" || found.source === "cwd" || found.root === cwd) return null;
  return FOUND_BY[found.source];
}

/**
 * The line that says which root a command uses, when it is not the obvious one (none, else): for
 * the start of a command's text output.
 */
export function rootLines(found: ProjectRoot, cwd: string): string[] {
  const source = rootSource(found, cwd);
  return source === null ? [] : [`project root: ${found.root} (${source})`];
}
