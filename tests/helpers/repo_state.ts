/**
 * Exact pictures of a repository for rollback tests, taken with plain file APIs and git's porcelain
 * (not with the code under test): every file's bytes and whole mode, links, directories; the
 * index as `ls-files`, `ls-files -t -v` and `status --porcelain=v2` show it.
 *
 * @module
 */

import { git } from "./git_repo.ts";

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** Every entry under `dir` (but `.git` and `skip`), as `kind mode content`. */
export async function exactTree(
  dir: string,
  { skip = [] }: { skip?: string[] } = {},
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (path: string, rel: string) => {
    for await (const entry of Deno.readDir(path)) {
      const relative = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.name === ".git" || skip.includes(relative)) continue;
      const full = `${path}/${entry.name}`;
      const info = await Deno.lstat(full);
      const mode = ((info.mode ?? 0) & 0o7777).toString(8);
      if (info.isSymlink) out[relative] = `link ${await Deno.readLink(full)}`;
      else if (info.isDirectory) {
        out[relative] = `dir ${mode}`;
        await walk(full, relative);
      } else out[relative] = `file ${mode} ${hex(await Deno.readFile(full))}`;
    }
  };
  await walk(dir, "");
  return out;
}

/** lifeline's own state directories, relative to the project root. */
export const OWN_STATE = ["sessions", "logs", ".lifeline", ".claims", ".EnjoyHarness", ".trace"];

/**
 * The index and status as git's porcelain shows them (no optional locks: nothing is written),
 * without lifeline's own state under `root` (a path relative to the repository).
 */
export async function indexState(repo: string, root = ""): Promise<string> {
  const run = (...args: string[]) => git(repo, "--no-optional-locks", ...args);
  const spec = [".", ...OWN_STATE.map((d) => `:(exclude)${root ? `${root}/` : ""}${d}`)];
  return [
    await run("ls-files", "--stage", "--", ...spec),
    await run("ls-files", "-t", "-v", "--", ...spec),
    await run("status", "--porcelain=v2", "--ignored", "--untracked-files=all", "--", ...spec),
    await run("rev-parse", "HEAD"),
  ].join("\n--\n");
}

/** Inode numbers of files, to prove they were never replaced. */
export async function inodes(paths: string[]): Promise<(number | null)[]> {
  return await Promise.all(paths.map(async (p) => (await Deno.lstat(p)).ino));
}

/** `du -sb` of a directory, in bytes. */
export async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  const walk = async (path: string) => {
    for await (const entry of Deno.readDir(path)) {
      const full = `${path}/${entry.name}`;
      const info = await Deno.lstat(full);
      if (info.isDirectory) await walk(full);
      else total += info.size;
    }
  };
  await walk(dir);
  return total;
}
