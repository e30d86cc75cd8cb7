/**
 * The user's registry of project roots: `roots/<hash>.json` in lifeline's state directory, one
 * small file per project a session ran in, written by `hook heartbeat` the first time it sees the
 * project (one `lstat` each time after that). The watcher and the daemon read it to look after
 * every project without a `--root` each; `status` lists them.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { shortHash } from "../core/text.ts";
import { stateDir } from "./layout.ts";
import { listStateDir, readStateText, removeFile, writeFileAtomic } from "./store.ts";

/** `roots/<hash>.json`. */
export interface RootEntry {
  root: string;
  first_seen: string;
}

/** The registry's directory. */
export function rootsDir(env: Readonly<Record<string, string>>): string {
  return joinPath(stateDir(env), "roots");
}

/**
 * A file name for a root: 16 hex digits, two 32-bit FNV-1a hashes from different starting points
 * (no collision among a user's projects). Synchronous and a few microseconds: `hook heartbeat`
 * computes it on every tool call, where a WebCrypto digest costs half a millisecond.
 */
function entryName(root: string): string {
  return `${shortHash(root)}${shortHash(`\0${root}`)}.json`;
}

/**
 * Whether the entry is there: one `lstat`, synchronous (the heartbeat's whole cost). One that
 * cannot be looked at is taken as missing: writing it then says why.
 */
function recorded(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Records a project root, unless it is recorded already (the usual case: one `lstat`). Returns
 * true when it was new.
 */
export function registerRoot(
  env: Readonly<Record<string, string>>,
  root: string,
  { now }: { now: number },
): Promise<boolean> {
  const path = joinPath(rootsDir(env), entryName(root));
  if (recorded(path)) return Promise.resolve(false);
  return writeEntry(env, path, { root, first_seen: new Date(now).toISOString() });
}

async function writeEntry(
  env: Readonly<Record<string, string>>,
  path: string,
  entry: RootEntry,
): Promise<boolean> {
  await Deno.mkdir(stateDir(env), { recursive: true }); // the first project a user has
  await writeFileAtomic(path, JSON.stringify(entry) + "\n", { root: stateDir(env) });
  return true;
}

/**
 * The registered roots that still exist. A root whose directory is gone is dropped from the
 * registry, and `dropped` hears of it (for a log line); with `readOnly` (a command that only
 * reports) it is left in the registry, and only not listed.
 */
export async function registeredRoots(
  env: Readonly<Record<string, string>>,
  { dropped, readOnly = false }: {
    dropped?: (root: string) => void | Promise<void>;
    readOnly?: boolean;
  } = {},
): Promise<string[]> {
  const own = stateDir(env);
  const dir = rootsDir(env);
  let names: string[];
  try {
    names = (await listStateDir(dir, { root: own })).filter((e) => e.isFile).map((e) => e.name);
  } catch {
    return []; // no registry yet
  }
  const roots: string[] = [];
  for (const name of names.filter((n) => n.endsWith(".json")).sort()) {
    const path = joinPath(dir, name);
    let entry: RootEntry;
    try {
      entry = JSON.parse(await readStateText(path, { root: own, maxBytes: 64 << 10 }));
      if (typeof entry?.root !== "string") continue;
    } catch {
      continue; // being written, or not ours
    }
    const exists = await Deno.stat(entry.root).then((info) => info.isDirectory, () => false);
    if (exists) {
      roots.push(entry.root);
    } else if (!readOnly) {
      await removeFile(path, { root: own }).catch(() => {});
      await dropped?.(entry.root);
    }
  }
  return roots;
}
