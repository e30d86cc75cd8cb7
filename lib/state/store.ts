/**
 * State files that survive crashes and concurrent writers (DESIGN §6):
 *
 * - whole-file writes go to a unique temp file in the same directory, are fsynced, then renamed
 *   over the target, so a reader sees the old file or the new one, never a mix;
 * - read-modify-write holds a kernel lock (`Deno.FsFile.tryLockSync`) on a dedicated `<file>.lock`
 *   that is never deleted; the kernel drops it when its holder dies, so it cannot go stale;
 * - a file that does not parse is moved aside to `<name>.corrupt-<ts>`, never overwritten blind;
 * - logs are JSON lines, each appended with one write; readers skip lines that do not parse;
 * - state files are read and written with Deno's synchronous calls (but fsync, streamed reads and
 *   the removal of whole directories): a hook, which has little else to do meanwhile, pays about
 *   half as much for them as for the asynchronous ones;
 * - below its root (the project root, or lifeline's own state directory), a state path that is or
 *   passes through a symbolic link is refused, and a file is opened only when it is a regular file
 *   (a FIFO would block the open, a device would never end), checked with `lstat` before the open
 *   and by device and inode after it, so a file swapped in between is refused too. Every read is
 *   bounded. The root itself may be reached through links. Every function that touches a state
 *   path takes its root (`{ root }`, required), so a call that forgets the check does not compile.
 *
 * @module
 */

import { CliError } from "../core/cli.ts";
import { jitterFraction, uniqueSuffix } from "../core/text.ts";
import { baseName, dirName, joinPath, relativeTo } from "../core/path.ts";

/**
 * How a state file's text becomes a value and back. `parse` throws (or rejects) on bad input; it
 * may be asynchronous, for a validator that loads what explains a rejection only then.
 */
export interface Codec<T> {
  parse(text: string): T | Promise<T>;
  format(value: T): string;
}

/** A JSON codec; `validate` turns parsed JSON into a value or throws (or rejects). */
export function jsonCodec<T>(validate: (value: unknown) => T | Promise<T>): Codec<T> {
  return {
    parse: (text) => validate(JSON.parse(text)),
    format: (value) => JSON.stringify(value, null, 2) + "\n",
  };
}

/** A file that holds one non-negative whole number, like `date +%s > heartbeat` writes. */
export const numberCodec = {
  parse(text: string): number {
    const trimmed = text.trim();
    if (!/^\d+$/.test(trimmed)) throw new Error(`expected a whole number, found ${show(trimmed)}`);
    return Number(trimmed);
  },
  format: (value: number) => `${value}\n`,
} satisfies Codec<number>;

function show(text: string): string {
  return JSON.stringify(text.length > 40 ? text.slice(0, 40) + "…" : text);
}

/** The lock for `path` could not be taken in time. */
export class LockTimeoutError extends Error {
  override name = "LockTimeoutError";
  constructor(readonly path: string, readonly waitMs: number) {
    super(`Could not lock "${path}.lock" within ${waitMs} ms`);
  }
}

/** Result of reading a state file. */
export type ReadResult<T> =
  | { kind: "ok"; value: T }
  | { kind: "missing" }
  | { kind: "corrupt"; reason: string; movedTo?: string };

/** Where a state path lives: every function that touches one takes this. */
export interface Within {
  /**
   * The directory the path is below: the project root, or lifeline's own state directory. It may
   * be reached through links; below it, nothing may be one.
   */
  root: string;
}

/**
 * A state path lifeline will not touch: it is or passes through a symbolic link, it is not a
 * regular file (or a directory where one is needed), it is too large, or its root is missing.
 * Hooks fail open on it (one line in the own log); commands exit 1 with the message.
 */
export class RefusedPathError extends CliError {
  override name = "RefusedPathError";
  constructor(readonly path: string, readonly reason: string) {
    super(
      `Refusing "${path}": ${reason}`,
      "lifeline keeps its state in real files and directories below the project root; " +
        "replace the link or special file with a plain one, or point --root at the real project",
    );
  }
}

/** Largest state file read whole (config files, loop states, records); larger ones are refused. */
export const MAX_STATE_BYTES = 16 << 20;

const encoder = new TextEncoder();

/** The path's segments below `root`; throws when it is not below it or climbs out with `..`. */
function segmentsBelow(root: string, path: string): string[] {
  const relative = relativeTo(root, path);
  if (relative === ".") return [];
  if (relative === path) throw new RefusedPathError(path, `it is not below "${root}"`);
  const segments = relative.split(/[\\/]/).filter((s) => s !== "" && s !== ".");
  if (segments.includes("..")) throw new RefusedPathError(path, `it climbs out of "${root}"`);
  return segments;
}

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Runs `fn` on `dir`, which is reached from `root` one directory at a time, each checked to be a
 * real directory (not a link); the root itself may be reached through links. With `create`,
 * missing directories are made on the way, but never the root; without it, a missing one throws
 * NotFound. After `fn`, the same directories are checked again: one that a racer swapped for a
 * link meanwhile is reported ({@linkcode RefusedPathError}), though what `fn` did through it is
 * done (Deno has no `openat`, and changing the process's working directory instead, to resolve
 * bare names in a directory entered once, is not safe in a process whose file operations run on
 * other threads: test workers and asynchronous calls would resolve their paths in it too).
 *
 * Synchronous on purpose, and so must `fn` be. These few calls run on every state access of
 * every hook, and cost microseconds so.
 */
function inStateDir<T>(root: string, dir: string, create: boolean, fn: () => T): T {
  const segments = segmentsBelow(root, dir);
  if (create) checkRoot(root);
  const seen: [string, Deno.FileInfo][] = [];
  let current = root;
  for (const segment of segments) {
    current = joinPath(current, segment);
    let info = lstatOrNull(current);
    if (!info) {
      if (!create) throw new Deno.errors.NotFound(`"${current}" does not exist`);
      try {
        Deno.mkdirSync(current);
      } catch (error) {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      }
      info = Deno.lstatSync(current);
    }
    if (info.isSymlink) throw new RefusedPathError(current, "it is a symbolic link");
    if (!info.isDirectory) throw new RefusedPathError(current, "it is not a directory");
    seen.push([current, info]);
  }
  const result = fn();
  for (const [path, info] of seen) {
    const now = lstatOrNull(path);
    if (!now || now.isSymlink || !sameEntry(now, info)) {
      throw new RefusedPathError(path, "it was replaced (by a link?) while being used");
    }
  }
  return result;
}

/** Whether two infos are of one file system entry. */
function sameEntry(a: Deno.FileInfo, b: Deno.FileInfo): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The root must be there (possibly through links): state is never written into a root made up. */
function checkRoot(root: string): void {
  let info;
  try {
    info = Deno.statSync(root);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new RefusedPathError(root, "the project root does not exist");
    }
    throw error;
  }
  if (!info.isDirectory) throw new RefusedPathError(root, "the project root is not a directory");
}

/**
 * Checks a file's entry (`name`; `path` names it in
 * messages): not a link, and a regular file when it exists. Returns its info.
 */
function checkFile(name: string, path = name): Deno.FileInfo | null {
  const info = lstatOrNull(name);
  if (info?.isSymlink) throw new RefusedPathError(path, "it is a symbolic link");
  if (info && !info.isFile) throw new RefusedPathError(path, "it is not a regular file");
  return info;
}

/**
 * `fn`'s result as a promise, and its throw as a rejection: the asynchronous face of the
 * synchronous file steps below (see the module's doc).
 */
function promised<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** How {@linkcode openChecked} opens a file. */
type Access = "read" | "append" | "lock";

/**
 * How each access opens an existing file. Reading and appending open it read+write too: a FIFO
 * opened for reading alone (or writing alone) waits in the kernel for the other end, and Deno can
 * pass neither `O_NONBLOCK` nor `O_NOFOLLOW`; opened read+write, it never waits (Linux, macOS).
 * Nothing is ever written through a file opened for reading.
 */
const OPEN_OPTIONS: Record<Access, Deno.OpenOptions> = {
  read: { read: true, write: true },
  append: { read: true, append: true },
  lock: { read: true, write: true },
};

/** The open a read+write one falls back to where writing is refused (see {@linkcode openExistingSync}). */
const FALLBACK: Record<Access, Deno.OpenOptions | undefined> = {
  read: { read: true },
  append: { append: true },
  lock: undefined,
};

/**
 * Whether an open failed because the file may not be written (its mode, a read-only file system,
 * an immutable or running file): only then is it opened again with less access.
 */
function writeRefused(error: unknown): boolean {
  if (error instanceof Deno.errors.PermissionDenied) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === "EROFS" || code === "EPERM" || code === "ETXTBSY";
}

/**
 * Opens the existing file `name` (in the working directory) the way {@linkcode OPEN_OPTIONS} says.
 * `undefined`: writing it is refused (its mode, a read-only file system), and the plain open of
 * {@linkcode FALLBACK} is left to the caller. (That one, the only open that could still block on a
 * FIFO swapped in after the check, needs a FIFO this user may not write, put in a directory this
 * user's own processes write.) Windows has no FIFOs, and other processes may have the file open
 * for reading only: there the plain open is used at once.
 */
function openExistingSync(name: string, access: Access): Deno.FsFile | undefined {
  const fallback = FALLBACK[access];
  if (fallback && Deno.build.os === "windows") return Deno.openSync(name, fallback);
  try {
    return Deno.openSync(name, OPEN_OPTIONS[access]);
  } catch (error) {
    if (fallback && writeRefused(error)) return undefined;
    throw error;
  }
}

/** Whether an open file is the regular file `before` (an `lstat` of its name) saw. */
function sameFile(after: Deno.FileInfo, before: Deno.FileInfo): boolean {
  return after.isFile && sameEntry(after, before);
}

/** What one try at opening found (see {@linkcode openChecked}). */
type Opened =
  | { file: Deno.FsFile; created?: boolean }
  | { again: true }
  | { plain: Deno.FileInfo };

/** One try at opening `name` (see {@linkcode openChecked}). */
function openHere(name: string, path: string, access: Access): Opened {
  const before = access === "lock" ? lockPathInfo(name) : checkFile(name, path);
  if (!before) {
    if (access === "read") throw new Deno.errors.NotFound(`"${path}" does not exist`);
    try {
      return {
        file: Deno.openSync(name, { ...OPEN_OPTIONS[access], createNew: true }),
        created: true,
      };
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return { again: true };
      throw error;
    }
  }
  const file = openExistingSync(name, access);
  if (!file) return { plain: before };
  if (sameFile(file.statSync(), before)) return { file };
  file.close();
  return { again: true }; // replaced between the lstat and the open
}

/**
 * Opens a regular file below `root`. A missing one is created (append, lock) with `createNew`,
 * which never follows a link; an existing one is checked with `lstat` first, opened so that a
 * FIFO swapped in meanwhile cannot block the open (see {@linkcode OPEN_OPTIONS}), and checked by
 * device and inode after it, so that anything but the regular file the `lstat` saw is refused.
 * Both happen in the file's directory, entered without links (see {@linkcode inStateDir}).
 */
function openChecked(path: string, root: string, access: Access): Deno.FsFile {
  for (let attempt = 1;; attempt++) {
    const opened = inStateDir(root, dirName(path), access !== "read", () => {
      const tried = openHere(path, path, access);
      if (!("plain" in tried)) return tried;
      // Writing it is refused: opened as asked, and checked against the lstat (see
      // openExistingSync for the one FIFO that could still block this open).
      const file = Deno.openSync(path, FALLBACK[access]);
      if (sameFile(file.statSync(), tried.plain)) return { file };
      file.close();
      return { again: true as const };
    });
    if ("file" in opened) {
      // Not what `path` names now: replaced meanwhile (an atomic write: try again), or opened
      // through a directory swapped for a link and back. A file this call made itself was not
      // replaced by anyone: it was made elsewhere, and the call fails.
      if (atItsPath(opened.file, path) && landedWhereNamed(opened.file, path, root)) {
        return opened.file;
      }
      opened.file.close();
      if ("created" in opened && opened.created) {
        throw new RefusedPathError(path, "it was replaced (by a link?) while being created");
      }
    }
    if (attempt >= 3) throw new RefusedPathError(path, "it was replaced while being opened");
  }
}

/**
 * Whether `file` is what `path` names now. Not: a directory on the way was swapped for a link and
 * back (each check of it passed), and took the open elsewhere.
 */
function atItsPath(file: Deno.FsFile, path: string): boolean {
  const at = lstatOrNull(path);
  return at !== null && sameEntry(file.statSync(), at);
}

/**
 * Linux: whether the kernel's own name for the open `file` (`/proc/self/fd`) is `path` below the
 * real `root`. The checks of the directories on the way can all pass while a racer swaps one for
 * a link and back between them; where the file went is then known only from the file itself.
 * (A file replaced since by another writer's rename is still where it was: " (deleted)".)
 * Elsewhere, and when the kernel does not say (no /proc, or a process without --allow-all), true.
 */
function landedWhereNamed(file: Deno.FsFile, path: string, root: string): boolean {
  if (Deno.build.os !== "linux") return true;
  const info = file.statSync();
  const expected = joinPath(Deno.realPathSync(root), relativeTo(root, path));
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc/self/fd")];
  } catch {
    return true; // no /proc, or not permitted (Deno asks --allow-all for /proc/self)
  }
  for (const entry of entries) {
    const fd = `/proc/self/fd/${entry.name}`;
    try {
      if (!sameEntry(Deno.statSync(fd), info)) continue;
      return Deno.readLinkSync(fd).replace(/ \(deleted\)$/, "") === expected;
    } catch {
      // Closed meanwhile (the directory listing's own descriptor, another call's file).
    }
  }
  return true;
}

/**
 * Opens the regular file `name` (`path` names it in
 * messages) for reading, synchronously, whatever is swapped in between the check and the open
 * (see {@linkcode openChecked}); returns it with its size at the open. Throws NotFound when it is
 * missing and {@linkcode RefusedPathError} when it is not a regular file. (A file this user may
 * not write is opened read-only, which is where a FIFO could still block: see
 * {@linkcode openExistingSync}.)
 */
export function openRegularFileSync(
  name: string,
  path = name,
): { file: Deno.FsFile; size: number } {
  const before = checkFile(name, path);
  if (!before) throw new Deno.errors.NotFound(`"${path}" does not exist`);
  const file = openExistingSync(name, "read") ?? Deno.openSync(name, FALLBACK.read);
  const after = file.statSync();
  if (!sameFile(after, before)) {
    file.close();
    throw new RefusedPathError(path, "it was replaced while being opened");
  }
  return { file, size: after.size };
}

/**
 * A lock file's info (`name`). A link there (left by hand, or dangling
 * after a cleanup) is moved aside rather than refused: every later update would fail on it
 * otherwise, and a link cannot be a lock lifeline made. The link is renamed, never followed; what
 * it points to is not touched.
 */
function lockPathInfo(name: string): Deno.FileInfo | null {
  const info = lstatOrNull(name);
  if (!info?.isSymlink) return checkFile(name);
  Deno.renameSync(name, `${name}.link-${Date.now()}-${uniqueSuffix()}`);
  return null;
}

/**
 * Reads at most `maxBytes` of an open file, and never more than its size when it was opened: a
 * file of `/proc` says it holds nothing, and one like `/proc/kmsg` would block a read for ever.
 * `complete` says whether that was all of it.
 */
function readAtMost(file: Deno.FsFile, maxBytes: number): { bytes: Uint8Array; complete: boolean } {
  const size = file.statSync().size;
  const bytes = new Uint8Array(Math.min(size, maxBytes));
  let total = 0;
  while (total < bytes.length) {
    const n = file.readSync(bytes.subarray(total));
    if (n === null) break;
    total += n;
  }
  return { bytes: bytes.subarray(0, total), complete: size <= maxBytes };
}

/**
 * The first `maxBytes` of a state file as text, and whether that was all of it. Throws NotFound
 * when it is missing and {@linkcode RefusedPathError} when it is not a plain file below `root`.
 */
export function readTextHead(
  path: string,
  { root, maxBytes }: Within & { maxBytes: number },
): Promise<{ text: string; complete: boolean }> {
  return promised(() => {
    const file = openChecked(path, root, "read");
    try {
      const { bytes, complete } = readAtMost(file, maxBytes);
      return { text: new TextDecoder().decode(bytes), complete };
    } finally {
      file.close();
    }
  });
}

/** A whole state file as text; one larger than `maxBytes` is refused. See {@linkcode readTextHead}. */
export async function readStateText(
  path: string,
  { root, maxBytes = MAX_STATE_BYTES }: Within & { maxBytes?: number },
): Promise<string> {
  const { text, complete } = await readTextHead(path, { root, maxBytes });
  if (!complete) throw new RefusedPathError(path, `it is larger than ${maxBytes} bytes`);
  return text;
}

/**
 * {@linkcode readStateText}, synchronously, for scans that read many small files at once (they
 * are several times faster so, and have nothing else to do meanwhile).
 */
export function readStateTextSync(
  path: string,
  { root, maxBytes = MAX_STATE_BYTES }: Within & { maxBytes?: number },
): string {
  return inStateDir(root, dirName(path), false, () => {
    const { file, size } = openRegularFileSync(path);
    try {
      if (size > maxBytes) throw new RefusedPathError(path, `it is larger than ${maxBytes} bytes`);
      // No more than its size at the open: see readAtMost.
      const buffer = new Uint8Array(size);
      let total = 0;
      for (let n; total < buffer.length && (n = file.readSync(buffer.subarray(total))) !== null;) {
        total += n;
      }
      return new TextDecoder().decode(buffer.subarray(0, total));
    } finally {
      file.close();
    }
  });
}

/**
 * The first `maxBytes` of a small file (a status word, a heartbeat), or undefined when it is
 * missing or not a regular file. The read is bounded, a symlink is refused, and the file is opened
 * so that a FIFO swapped in after the check can neither block the open nor be read (see
 * {@linkcode openRegularFileSync}): a loop over every session cannot be stalled by one of them.
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

/**
 * Opens a state file for reading (to stream it). Throws NotFound when it is missing and
 * {@linkcode RefusedPathError} when it is not a regular file below `root` reached without links.
 */
export function openStateFile(path: string, { root }: Within): Promise<Deno.FsFile> {
  return promised(() => openChecked(path, root, "read"));
}

/**
 * The last `maxBytes` before `end` (default: the end of the file) of a state file, as complete
 * lines: a first line cut in the middle is dropped. `complete` says whether that was all of it.
 */
export async function readFileTail(
  path: string,
  { root, maxBytes, end }: Within & { maxBytes: number; end?: number },
): Promise<{ lines: string[]; complete: boolean }> {
  const file = await openStateFile(path, { root });
  try {
    const size = Math.min(end ?? Infinity, (await file.stat()).size);
    const start = Math.max(0, size - maxBytes);
    await file.seek(start, Deno.SeekMode.Start);
    const buffer = new Uint8Array(size - start);
    let filled = 0;
    while (filled < buffer.length) {
      const n = await file.read(buffer.subarray(filled));
      if (n === null) break;
      filled += n;
    }
    const lines = new TextDecoder().decode(buffer.subarray(0, filled)).split("\n");
    return { lines: start > 0 ? lines.slice(1) : lines, complete: start === 0 };
  } finally {
    file.close();
  }
}

/**
 * The entries of a directory below `root` reached without links (entries that are links are
 * listed as such, never followed). Throws NotFound when it is not there.
 */
export function listStateDir(dir: string, { root }: Within): Promise<Deno.DirEntry[]> {
  return promised(() => inStateDir(root, dir, false, () => [...Deno.readDirSync(dir)]));
}

/** Creates `path` and the directories above it, below `root` (which must exist), without links. */
export function ensureDir(path: string, { root }: Within): Promise<void> {
  return promised(() => inStateDir(root, path, true, () => {}));
}

/**
 * True when the state file exists; throws {@linkcode RefusedPathError} when it, or a directory on
 * the way from `root`, is a link, or when it is not a regular file.
 */
export function stateFileExists(path: string, { root }: Within): boolean {
  try {
    return inStateDir(root, dirName(path), false, () => checkFile(path) !== null);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** True when `path` exists (a symlink counts as itself). Other errors are thrown. */
export function pathExists(path: string): Promise<boolean> {
  return promised(() => lstatOrNull(path) !== null);
}

/** The names in a directory, sorted; none when it does not exist or cannot be read. */
export async function listNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  } catch {
    // Missing or unreadable: nothing listed.
  }
  return names.sort();
}

function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length;) done += file.writeSync(bytes.subarray(done));
}

/**
 * Writes `data` to `path` atomically: temp file, fsync, rename. Creates parent directories below
 * `root`. `mode` and `owner` set the file's permissions (see {@linkcode WriteOptions}).
 * `durable: false` skips the fsync, for a file whose loss in a power cut costs nothing (the
 * heartbeat, rewritten on every tool call): readers still see the old file or the new one.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  { root, mode, owner, durable = true }: Within & WriteOptions & { durable?: boolean },
): Promise<void> {
  const dir = dirName(path);
  const temp = joinPath(dir, `.${baseName(path)}.${uniqueSuffix()}.tmp`);
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  // Each step that names a file does it in the directory checked to be reached without links.
  const file = inStateDir(root, dir, true, () => {
    checkFile(path, path);
    return Deno.openSync(temp, { write: true, createNew: true, ...modeOption(mode) });
  });
  try {
    try {
      writeAll(file, bytes);
      // Asynchronous, so that a hook goes on with its other work while the disk catches up.
      if (durable) await file.sync();
      inStateDir(root, dir, false, () => {
        // The temp file (a name no one else uses) must be where it was made: a directory on the
        // way swapped for a link and back would have put it elsewhere. (After the rename, `path`
        // may well name another writer's file: atomic writes of one file race, and the last wins.)
        if (!atItsPath(file, temp)) {
          throw new RefusedPathError(path, "it was replaced (by a link?) while being written");
        }
        setMode(temp, mode, owner);
        Deno.renameSync(temp, path);
      });
      if (!landedWhereNamed(file, path, root)) {
        throw new RefusedPathError(path, "it was replaced (by a link?) while being written");
      }
    } finally {
      file.close();
    }
  } catch (error) {
    try {
      inStateDir(root, dir, false, () => Deno.removeSync(temp));
    } catch {
      // Gone already, or its directory is.
    }
    throw error;
  }
}

/** The mode a file is created with: never more open than `mode` (umask takes bits away). */
function modeOption(mode: number | undefined): { mode?: number } {
  return mode === undefined ? {} : { mode };
}

/** How a written file's permissions are set. */
export interface WriteOptions {
  /** The permission bits, exactly (umask aside); else the default. */
  mode?: number | undefined;
  /**
   * The owner to give it (a file rewritten for someone else keeps theirs). Where that is not
   * permitted (only root may give a file away), it keeps the writer's.
   */
  owner?: { uid: number; gid: number } | undefined;
}

/** Sets `name`'s owner and permission bits (see {@linkcode WriteOptions}; not on Windows). */
function setMode(name: string, mode: number | undefined, owner?: WriteOptions["owner"]): void {
  if (Deno.build.os === "windows") return;
  if (owner) {
    try {
      Deno.chownSync(name, owner.uid, owner.gid);
    } catch (error) {
      if (!(error instanceof Deno.errors.PermissionDenied)) throw error;
    }
  }
  if (mode !== undefined) Deno.chmodSync(name, mode); // after chown, which may clear setuid bits
}

/**
 * Creates `path` with `data`, failing with AlreadyExists when it is there (creating it is a
 * claim: of two callers, one wins). Never follows a link. Creates parent directories below `root`.
 */
export function writeNewFile(
  path: string,
  data: string,
  { root, mode, owner }: Within & WriteOptions,
): Promise<void> {
  return promised(() => {
    const file = inStateDir(root, dirName(path), true, () => {
      const created = Deno.openSync(path, { write: true, createNew: true, ...modeOption(mode) });
      setMode(path, mode, owner);
      return created;
    });
    try {
      writeAll(file, encoder.encode(data));
    } finally {
      file.close();
    }
  });
}

/** Appends `text` with one write to a regular file below `root`, creating it when missing. */
export function appendText(path: string, text: string, { root }: Within): Promise<void> {
  return promised(() => {
    const file = openChecked(path, root, "append");
    try {
      writeAll(file, encoder.encode(text));
    } finally {
      file.close();
    }
  });
}

/** Removes a state file (not a link, not a directory). Throws NotFound when it is not there. */
export function removeFile(path: string, { root }: Within): Promise<void> {
  return promised(() =>
    inStateDir(root, dirName(path), false, () => {
      if (!checkFile(path, path)) throw new Deno.errors.NotFound(`"${path}" does not exist`);
      Deno.removeSync(path);
    })
  );
}

/**
 * Removes a state directory below `root` (never the root) and everything in it: links inside
 * are removed, never followed.
 */
export function removeDir(path: string, { root }: Within): Promise<void> {
  return promised(() => {
    if (segmentsBelow(root, path).length === 0) throw new RefusedPathError(path, "it is the root");
    inStateDir(root, dirName(path), false, () => {
      const info = lstatOrNull(path);
      if (!info) throw new Deno.errors.NotFound(`"${path}" does not exist`);
      if (info.isSymlink) throw new RefusedPathError(path, "it is a symbolic link");
      if (!info.isDirectory) throw new RefusedPathError(path, "it is not a directory");
      Deno.removeSync(path, { recursive: true }); // never follows a link inside
    });
  });
}

/**
 * Renames a state file or directory (or a link: it is moved, never followed) within one directory
 * below `root`.
 */
export function renameFile(from: string, to: string, { root }: Within): Promise<void> {
  return promised(() => {
    if (dirName(from) !== dirName(to)) {
      throw new RefusedPathError(to, `it is not in the directory of "${from}"`);
    }
    inStateDir(root, dirName(from), false, () => Deno.renameSync(from, to));
  });
}

/**
 * How long a lock may be waited for, in ms (0: one try); or a function that says, asked only when
 * the lock is taken (a hook's wait is configured, and the configuration is read only if needed).
 */
export type LockWait = number | (() => Promise<number>);

/**
 * Runs `fn` while holding an exclusive kernel lock on `<path>.lock`. Waits at most `waitMs` and
 * throws {@linkcode LockTimeoutError} when the lock stays taken.
 */
export async function withLock<T>(
  path: string,
  fn: () => Promise<T>,
  { root, waitMs }: Within & { waitMs: LockWait },
): Promise<T> {
  const file = openChecked(`${path}.lock`, root, "lock");
  try {
    const started = Date.now();
    let wait: number | undefined;
    let pause = 1;
    while (!file.tryLockSync(true)) {
      wait ??= typeof waitMs === "number" ? waitMs : await waitMs();
      const left = started + wait - Date.now();
      if (left <= 0) throw new LockTimeoutError(path, wait);
      // Random pauses keep many waiters from retrying in lockstep.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(left, pause * jitterFraction() + 1))
      );
      pause = Math.min(pause * 2, 20);
    }
    try {
      return await fn();
    } finally {
      file.unlockSync();
    }
  } finally {
    file.close();
  }
}

/**
 * Reads a state file without locking (writers rename whole files, so what is read is complete).
 * A file that does not parse, or is larger than `maxBytes`, is reported as corrupt, not moved:
 * only a lock holder may move it.
 */
export async function readState<T>(
  path: string,
  codec: Codec<T>,
  { root, maxBytes = MAX_STATE_BYTES }: Within & { maxBytes?: number },
): Promise<ReadResult<T>> {
  let text: string;
  try {
    const head = await readTextHead(path, { root, maxBytes });
    if (!head.complete) return { kind: "corrupt", reason: `larger than ${maxBytes} bytes` };
    text = head.text;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kind: "missing" };
    throw error;
  }
  try {
    return { kind: "ok", value: await codec.parse(text) };
  } catch (error) {
    return { kind: "corrupt", reason: describeError(error) };
  }
}

/** Moves a corrupt file aside to `<name>.corrupt-<ts>` and returns the new path. */
export async function quarantine(
  path: string,
  { root, now }: Within & { now: number },
): Promise<string> {
  const stamp = new Date(now).toISOString().replace(/[:.]/g, "");
  for (let attempt = 0;; attempt++) {
    const target = `${path}.corrupt-${stamp}${attempt ? `-${attempt}` : ""}`;
    if (await pathExists(target)) continue;
    await renameFile(path, target, { root });
    return target;
  }
}

/** What {@linkcode updateState} did. */
export interface UpdateResult<T> {
  /** The value now in the file (the old one when the update wrote nothing). */
  value: T | undefined;
  /** What was there before; a corrupt file carries where it was moved. */
  previous: ReadResult<T>;
  written: boolean;
}

/**
 * Locked read-modify-write. `update` gets the current value (undefined when the file is missing
 * or corrupt) and returns the new one, or undefined to leave the file as it is. A corrupt file is
 * quarantined first, so `update` starts from defaults and the bad bytes are kept.
 */
export function updateState<T>(
  path: string,
  codec: Codec<T>,
  update: (
    current: T | undefined,
    previous: ReadResult<T>,
  ) => T | undefined | Promise<T | undefined>,
  { root, waitMs, now }: Within & { waitMs: LockWait; now: number },
): Promise<UpdateResult<T>> {
  return withLock(path, async () => {
    let previous = await readState(path, codec, { root });
    if (previous.kind === "corrupt") {
      previous = { ...previous, movedTo: await quarantine(path, { root, now }) };
    }
    const current = previous.kind === "ok" ? previous.value : undefined;
    const next = await update(current, previous);
    if (next === undefined) return { value: current, previous, written: false };
    await writeFileAtomic(path, codec.format(next), { root });
    return { value: next, previous, written: true };
  }, { root, waitMs });
}

/** Longest string kept in a log record, so a record stays one small write. */
const MAX_LOG_STRING = 600;

function clampStrings(value: unknown): unknown {
  if (typeof value === "string") {
    return value.length > MAX_LOG_STRING ? value.slice(0, MAX_LOG_STRING) + "…" : value;
  }
  if (Array.isArray(value)) return value.map(clampStrings);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clampStrings(v)]));
  }
  return value;
}

/**
 * Appends `record` as one JSON line with a single write to a file opened for append, so
 * concurrent appenders never interleave. Long strings are shortened to keep the line small.
 */
export async function appendJsonLine(path: string, record: unknown, within: Within): Promise<void> {
  await appendText(path, JSON.stringify(clampStrings(record)) + "\n", within);
}

/** How {@linkcode readLines} reads. */
export interface LineOptions extends Within {
  /** Longer lines are skipped whole (counted in `skipped`), so one giant row cannot exhaust memory. */
  maxLineLength?: number;
  skipped?: { count: number };
}

/** Streams the lines of a state file with bounded memory (see {@linkcode LineOptions}). */
export async function* readLines(
  path: string,
  { root, maxLineLength = 16 << 20, skipped }: LineOptions,
): AsyncGenerator<string> {
  const file = await openStateFile(path, { root });
  const decoder = new TextDecoder();
  let pending = "";
  let oversized = false;
  try {
    const buffer = new Uint8Array(1 << 16);
    for (;;) {
      const n = await file.read(buffer);
      const chunk = n === null ? decoder.decode() : decoder.decode(buffer.subarray(0, n), {
        stream: true,
      });
      let start = 0;
      for (let end = chunk.indexOf("\n"); end >= 0; end = chunk.indexOf("\n", start)) {
        const piece = chunk.slice(start, end);
        start = end + 1;
        if (oversized) {
          oversized = false;
          pending = "";
          continue;
        }
        const line = pending + piece;
        pending = "";
        if (line.length > maxLineLength) {
          if (skipped) skipped.count++;
          continue;
        }
        yield line;
      }
      if (!oversized) {
        pending += chunk.slice(start);
        if (pending.length > maxLineLength) {
          oversized = true;
          pending = "";
          if (skipped) skipped.count++;
        }
      }
      if (n === null) break;
    }
    if (pending !== "" && !oversized) yield pending;
  } finally {
    file.close();
  }
}

/** Streams the parsed JSON lines of a file, skipping blank, torn and oversized lines. */
export async function* readJsonLines(
  path: string,
  options: LineOptions,
): AsyncGenerator<unknown> {
  for await (const line of readLines(path, options)) {
    if (line.trim() === "") continue;
    try {
      yield JSON.parse(line);
    } catch {
      if (options.skipped) options.skipped.count++;
    }
  }
}

/** A one-line description of an error for logs and messages (whitespace collapsed, bounded). */
export function describeError(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? line.slice(0, 300) + "…" : line;
}

/** A lock held for a process's whole life (single-instance watchers and daemons). */
export interface InstanceLock {
  release(): Promise<void>;
}

/**
 * Takes `<path>.lock` for as long as the process runs, or reports who holds it. The kernel drops
 * the lock when its holder dies, even by `kill -9`, so the next start takes over at once. The pid
 * file beside it is information for people and error messages, never the lock itself.
 */
export async function acquireInstanceLock(
  path: string,
  pid: number,
  { root }: Within,
): Promise<{ lock: InstanceLock } | { heldBy: number | null }> {
  const file = openChecked(`${path}.lock`, root, "lock");
  if (!file.tryLockSync(true)) {
    file.close();
    // A holder that has just started may not have written its pid yet: give it a moment.
    for (let waited = 0;; waited += 25) {
      try {
        return {
          heldBy: numberCodec.parse(await readStateText(`${path}.pid`, { root, maxBytes: 64 })),
        };
      } catch {
        if (waited >= 1000) return { heldBy: null };
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  }
  await writeFileAtomic(`${path}.pid`, numberCodec.format(pid), { root });
  return {
    lock: {
      async release() {
        await Deno.remove(`${path}.pid`).catch(() => {});
        await file.unlock().catch(() => {});
        file.close();
      },
    },
  };
}
