/**
 * Files of a work tree as they are on disk, for a backup that is exact: bytes without any filter
 * or line-ending conversion, the whole mode (0600 stays 0600), symlinks as links. Nothing here
 * follows a symlink: a path under a linked directory is reported absent (the link itself is
 * what the work tree holds there).
 *
 * @module
 */

import { dirName, joinPath } from "../core/path.ts";
import { git, gitRun } from "../host/git.ts";
import { RefusedError } from "./repo.ts";

/**
 * What is at a path. `oid` is the git object of the exact bytes (or link target), when hashed;
 * `stamp` what `lstat` said of a file or link when it was looked at (see {@linkcode stampOf}).
 */
export type PathState =
  | { kind: "absent" }
  | { kind: "file"; mode: number; size: number; oid?: string; stamp?: string }
  | { kind: "symlink"; target: string; oid?: string; stamp?: string }
  | { kind: "dir"; mode: number }
  | { kind: "special" };

/**
 * What changes when somebody writes a file: its inode, size, mode and modification time (not the
 * change time: linking the file elsewhere changes that). Compared to tell a later write.
 */
export function stampOf(info: Deno.FileInfo): string {
  return `${info.ino}:${info.size}:${info.mode}:${info.mtime?.getTime()}`;
}

/** Names git listed that were not UTF-8 (decoded with U+FFFD), which lifeline cannot save. */
export function undecodable(paths: Iterable<string>): string[] {
  return [...paths].filter((path) => path.includes("\uFFFD"));
}

/** How much {@linkcode readStates} hashes: nothing, or every file (writing the objects, or not). */
export type Hashing = "none" | "check" | "write";

/**
 * True when a part of `path` is `.git` in any case. git holds no such path (it refuses them, for
 * case-insensitive file systems), so a backup cannot hold one, and a restore never writes one.
 */
export function namesGitDir(path: string): boolean {
  return path.split("/").some((part) => part.toLowerCase() === ".git");
}

/** The parent directories of a relative path, nearest last: `a/b/c` → `a`, `a/b`. */
export function ancestors(path: string): string[] {
  const parts = path.split("/");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** lstat that refuses to pass through a symlink or a file on the way: then the path is absent. */
export class TreeReader {
  #dirs = new Map<string, boolean>();
  constructor(readonly top: string) {}

  async #isRealDir(path: string): Promise<boolean> {
    let known = this.#dirs.get(path);
    if (known === undefined) {
      const info = await lstatOrNull(joinPath(this.top, path));
      known = info !== null && info.isDirectory;
      this.#dirs.set(path, known);
    }
    return known;
  }

  /** The state of `path` (relative to the top), not hashed. */
  async state(path: string): Promise<PathState> {
    for (const dir of ancestors(path)) {
      if (!(await this.#isRealDir(dir))) return { kind: "absent" };
    }
    const full = joinPath(this.top, path);
    const info = await lstatOrNull(full);
    if (info === null) return { kind: "absent" };
    const mode = (info.mode ?? 0o644) & 0o7777;
    if (info.isSymlink) {
      return { kind: "symlink", target: await readLinkOf(full, path), stamp: stampOf(info) };
    }
    if (info.isDirectory) return { kind: "dir", mode };
    if (info.isFile) return { kind: "file", mode, size: info.size, stamp: stampOf(info) };
    return { kind: "special" };
  }

  /** The first directory above `path` that something else (a file, a link) stands in, or null. */
  async blocker(path: string): Promise<string | null> {
    for (const dir of ancestors(path)) {
      if (await this.#isRealDir(dir)) continue;
      return (await lstatOrNull(joinPath(this.top, dir))) === null ? null : dir;
    }
    return null;
  }

  /** Everything below the directory `path`, depth first, and whether a `.git` is among it. */
  async walk(path: string): Promise<{ entries: [string, PathState][]; nestedRepo: boolean }> {
    const entries: [string, PathState][] = [];
    let nestedRepo = false;
    for await (const entry of readDirOf(joinPath(this.top, path), path)) {
      const child = `${path}/${entry.name}`;
      if (entry.name === ".git") nestedRepo = true;
      const state = await this.state(child);
      entries.push([child, state]);
      if (state.kind === "dir") {
        const below = await this.walk(child);
        entries.push(...below.entries);
        nestedRepo ||= below.nestedRepo;
      }
    }
    return { entries, nestedRepo };
  }
}

/** A link's target; a target that is not UTF-8 is a refusal (Deno cannot read it exactly). */
async function readLinkOf(full: string, path: string): Promise<string> {
  try {
    return await Deno.readLink(full);
  } catch (error) {
    if (!(error instanceof Deno.errors.InvalidData)) throw error;
    throw new RefusedError(
      `the link ${path} points at a name that is not UTF-8, which lifeline cannot save exactly`,
      "point it at a UTF-8 name, or move it out of the project, first",
    );
  }
}

/** A directory's entries; one lifeline may not read is a refusal, before anything changes. */
async function* readDirOf(full: string, path: string): AsyncIterable<Deno.DirEntry> {
  try {
    yield* Deno.readDir(full);
  } catch (error) {
    if (!(error instanceof Deno.errors.PermissionDenied)) throw error;
    throw new RefusedError(
      `lifeline may not read ${path}/, which is in the way of the rollback, to save it`,
      `give it back read permission (chmod u+rx ${path}), or move it out of the project, first`,
    );
  }
}

/** lstat, or null when nothing is there (or a file stands where a directory on the way is). */
export async function lstatOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return null;
    }
    throw error;
  }
}

/**
 * Paths `git hash-object --stdin-paths` reads back unchanged: one per line, not C-quoted (no `"`
 * first), and not ending in a carriage return, which git strips as half of a CRLF line ending (so
 * `notes\r` would be read as `notes`). The others are hashed one by one, named in the arguments.
 */
const PLAIN_PATH = /^[^\n"](?:[^\n]*[^\n\r])?$/;

/**
 * Hashes files and link targets (`states` is updated in place) with `--no-filters`, so the object
 * holds the bytes on disk. `tmp` holds the link targets as files while they are hashed. A file is
 * read at its path below `top`, or where `fileOf` says it is now.
 */
export async function hashStates(
  top: string,
  states: Map<string, PathState>,
  { write, tmp, fileOf = (path) => joinPath(top, path) }: {
    write: boolean;
    tmp: string;
    fileOf?: (path: string) => string;
  },
): Promise<void> {
  const writing = write ? ["-w"] : [];
  const batch: [PathState & { oid?: string }, string][] = [];
  let links = 0;
  for (const [path, state] of states) {
    if (state.kind === "file") batch.push([state, fileOf(path)]);
    else if (state.kind === "symlink") {
      await Deno.mkdir(tmp, { recursive: true });
      const file = joinPath(tmp, `link-${crypto.randomUUID().slice(0, 8)}-${links++}`);
      await Deno.writeTextFile(file, state.target);
      batch.push([state, file]);
    }
  }
  const plain = batch.filter(([, file]) => PLAIN_PATH.test(file));
  if (plain.length > 0) {
    const out = await git(top, ["hash-object", ...writing, "--no-filters", "--stdin-paths"], {
      stdin: plain.map(([, file]) => file + "\n").join(""),
    });
    out.split("\n").forEach((oid, i) => (plain[i]![0].oid = oid));
  }
  for (const [state, file] of batch.filter(([, f]) => !PLAIN_PATH.test(f))) {
    state.oid = await git(top, ["hash-object", ...writing, "--no-filters", "--", file]);
  }
}

/** Reads blobs by object id with one `git cat-file --batch`. */
export async function readBlobs(top: string, oids: string[]): Promise<Map<string, Uint8Array>> {
  const blobs = new Map<string, Uint8Array>();
  const unique = [...new Set(oids)];
  if (unique.length === 0) return blobs;
  const { stdoutBytes: out } = await gitRun(top, ["cat-file", "--batch"], {
    stdin: unique.join("\n") + "\n",
  });
  const decoder = new TextDecoder();
  let at = 0;
  for (const oid of unique) {
    const end = out.indexOf(10, at);
    const header = decoder.decode(out.subarray(at, end)).split(" ");
    if (header[0] !== oid || header[1] !== "blob") throw new Error(`object ${oid} is missing`);
    const size = Number(header[2]);
    blobs.set(oid, out.subarray(end + 1, end + 1 + size));
    at = end + 1 + size + 1;
  }
  return blobs;
}

/**
 * Writes a file atomically with exactly `mode`: `fill` writes a temporary file (and closes the
 * stream), which is renamed over `full`. The temporary file is in `tmp`, the run's own directory
 * in the git dir, so a run killed half-way leaves nothing in the project; only when that is on
 * another file system is it beside `full`.
 */
export async function putFile(
  full: string,
  mode: number,
  { tmp, fill }: { tmp: string; fill: (out: WritableStream<Uint8Array>) => Promise<void> },
): Promise<void> {
  const name = `.lifeline-restore-${crypto.randomUUID().slice(0, 8)}.tmp`;
  const write = async (temp: string) => {
    try {
      const file = await Deno.open(temp, { write: true, createNew: true, mode: 0o600 });
      await fill(file.writable);
      await Deno.chmod(temp, mode);
      await Deno.rename(temp, full);
    } catch (error) {
      await Deno.remove(temp).catch(() => {});
      throw error;
    }
  };
  await Deno.mkdir(tmp, { recursive: true });
  try {
    await write(joinPath(tmp, name));
  } catch (error) {
    if ((error as { code?: string }).code !== "EXDEV") throw error;
    await write(joinPath(dirName(full), name));
  }
}

/** A `fill` for {@linkcode putFile} that writes `bytes`. */
export function bytesFill(bytes: Uint8Array): (out: WritableStream<Uint8Array>) => Promise<void> {
  return (out) => ReadableStream.from([bytes]).pipeTo(out);
}

/** Removes whatever is at `full` (a directory with everything in it); nothing there is fine. */
export async function removePath(full: string): Promise<void> {
  try {
    await Deno.remove(full, { recursive: true });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}
