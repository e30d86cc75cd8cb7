/**
 * State files that survive crashes and concurrent writers (DESIGN §6):
 *
 * - whole-file writes go to a unique temp file in the same directory, are fsynced, then renamed
 *   over the target, so a reader sees the old file or the new one, never a mix;
 * - read-modify-write holds a kernel lock (`Deno.FsFile.tryLock`) on a dedicated `<file>.lock`
 *   that is never deleted; the kernel drops it when its holder dies, so it cannot go stale;
 * - a file that does not parse is moved aside to `<name>.corrupt-<ts>`, never overwritten blind;
 * - logs are JSON lines, each appended with one write; readers skip lines that do not parse.
 *
 * @module
 */

import { baseName, dirName, joinPath } from "../core/path.ts";

/** How a state file's text becomes a value and back. `parse` throws on bad input. */
export interface Codec<T> {
  parse(text: string): T;
  format(value: T): string;
}

/** A JSON codec; `validate` turns parsed JSON into a value or throws. */
export function jsonCodec<T>(validate: (value: unknown) => T): Codec<T> {
  return {
    parse: (text) => validate(JSON.parse(text)),
    format: (value) => JSON.stringify(value, null, 2) + "\n",
  };
}

/** A file that holds one non-negative whole number, like `date +%s > heartbeat` writes. */
export const numberCodec: Codec<number> = {
  parse(text) {
    const trimmed = text.trim();
    if (!/^\d+$/.test(trimmed)) throw new Error(`expected a whole number, found ${show(trimmed)}`);
    return Number(trimmed);
  },
  format: (value) => `${value}\n`,
};

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

const encoder = new TextEncoder();

/** Creates `path` and its parents if missing. */
export async function ensureDir(path: string): Promise<void> {
  await Deno.mkdir(path, { recursive: true });
}

/**
 * Opens a file, creating missing parent directories on the way. The directory usually exists, so
 * the open comes first and `mkdir` only runs when it failed for that reason.
 */
async function openCreatingDirs(path: string, options: Deno.OpenOptions): Promise<Deno.FsFile> {
  try {
    return await Deno.open(path, options);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    await ensureDir(dirName(path));
    return await Deno.open(path, options);
  }
}

/** True when `path` exists (a symlink counts as itself). Other errors are thrown. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
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

/**
 * Writes `data` to `path` atomically: temp file, fsync, rename. Creates parent directories.
 * `durable: false` skips the fsync, for a file whose loss in a power cut costs nothing (the
 * heartbeat, rewritten on every tool call): readers still see the old file or the new one.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  { durable = true }: { durable?: boolean } = {},
): Promise<void> {
  const temp = joinPath(
    dirName(path),
    `.${baseName(path)}.${Math.random().toString(36).slice(2, 10)}.tmp`,
  );
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  try {
    const file = await openCreatingDirs(temp, { write: true, createNew: true });
    try {
      for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
      if (durable) await file.sync();
    } finally {
      file.close();
    }
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}

/**
 * Runs `fn` while holding an exclusive kernel lock on `<path>.lock`. Waits at most `waitMs`
 * (0: one try) and throws {@linkcode LockTimeoutError} when the lock stays taken.
 */
export async function withLock<T>(
  path: string,
  fn: () => Promise<T>,
  { waitMs }: { waitMs: number },
): Promise<T> {
  const file = await openCreatingDirs(`${path}.lock`, { read: true, write: true, create: true });
  try {
    const deadline = Date.now() + waitMs;
    let pause = 1;
    while (!(await file.tryLock(true))) {
      const left = deadline - Date.now();
      if (left <= 0) throw new LockTimeoutError(path, waitMs);
      // Random pauses keep many waiters from retrying in lockstep.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(left, pause * Math.random() + 1))
      );
      pause = Math.min(pause * 2, 20);
    }
    try {
      return await fn();
    } finally {
      await file.unlock();
    }
  } finally {
    file.close();
  }
}

/**
 * Reads a state file without locking (writers rename whole files, so what is read is complete).
 * A file that does not parse is reported, not moved: only a lock holder may move it.
 */
export async function readState<T>(path: string, codec: Codec<T>): Promise<ReadResult<T>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kind: "missing" };
    throw error;
  }
  try {
    return { kind: "ok", value: codec.parse(text) };
  } catch (error) {
    return { kind: "corrupt", reason: describeError(error) };
  }
}

/** Moves a corrupt file aside to `<name>.corrupt-<ts>` and returns the new path. */
export async function quarantine(path: string, now: number): Promise<string> {
  const stamp = new Date(now).toISOString().replace(/[:.]/g, "");
  for (let attempt = 0;; attempt++) {
    const target = `${path}.corrupt-${stamp}${attempt ? `-${attempt}` : ""}`;
    try {
      await Deno.lstat(target);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      await Deno.rename(path, target);
      return target;
    }
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
  { waitMs, now }: { waitMs: number; now: number },
): Promise<UpdateResult<T>> {
  return withLock(path, async () => {
    let previous = await readState(path, codec);
    if (previous.kind === "corrupt") {
      previous = { ...previous, movedTo: await quarantine(path, now) };
    }
    const current = previous.kind === "ok" ? previous.value : undefined;
    const next = await update(current, previous);
    if (next === undefined) return { value: current, previous, written: false };
    await writeFileAtomic(path, codec.format(next));
    return { value: next, previous, written: true };
  }, { waitMs });
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
export async function appendJsonLine(path: string, record: unknown): Promise<void> {
  await ensureDir(dirName(path));
  await Deno.writeTextFile(path, JSON.stringify(clampStrings(record)) + "\n", {
    append: true,
    create: true,
  });
}

/**
 * Streams the lines of a file with bounded memory. A line longer than `maxLineLength` characters is skipped
 * whole (counted in `skipped`), so one giant row cannot exhaust memory.
 */
export async function* readLines(
  path: string,
  { maxLineLength = 16 << 20, skipped }: { maxLineLength?: number; skipped?: { count: number } } =
    {},
): AsyncGenerator<string> {
  const file = await Deno.open(path, { read: true });
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
  options: { maxLineLength?: number; skipped?: { count: number } } = {},
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
): Promise<{ lock: InstanceLock } | { heldBy: number | null }> {
  const file = await openCreatingDirs(`${path}.lock`, { read: true, write: true, create: true });
  if (!(await file.tryLock(true))) {
    file.close();
    // A holder that has just started may not have written its pid yet: give it a moment.
    for (let waited = 0;; waited += 25) {
      try {
        return { heldBy: numberCodec.parse(await Deno.readTextFile(`${path}.pid`)) };
      } catch {
        if (waited >= 1000) return { heldBy: null };
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  }
  await writeFileAtomic(`${path}.pid`, numberCodec.format(pid));
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
