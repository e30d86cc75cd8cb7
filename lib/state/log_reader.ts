/**
 * Reading the watcher's and the daemon's logs (`event_log.ts`) for `lifeline logs`: the newest
 * records of each, with bounded memory however large a log has grown, and following a log as it
 * grows, across its rotations.
 *
 * @module
 */

import { type EventLogName, eventLogPath } from "./event_log.ts";
import { stateDir } from "./layout.ts";
import { openStateFile, readFileTail } from "./store.ts";

/** One record of a log. */
export interface LogRecord {
  /** The log it came from. */
  log: EventLogName;
  /** Its `ts`, epoch ms (records without one are not shown). */
  at: number;
  record: Record<string, unknown>;
}

/** How much of each log file is read at most. */
export const READ_BYTES = 4 << 20;

/** A line of a log as a record, or null (torn, or not a record). */
export function parseRecord(log: EventLogName, line: string): LogRecord | null {
  if (line.trim() === "") return null;
  try {
    const record = JSON.parse(line);
    const at = Date.parse(record?.ts);
    return Number.isFinite(at) ? { log, at, record } : null;
  } catch {
    return null;
  }
}

/** What {@linkcode readLogs} found. */
export interface LogTail {
  records: LogRecord[];
  /** Logs of which only the last {@linkcode READ_BYTES} were read. */
  cut: string[];
}

/**
 * The records of the named logs (and of their previous, rotated files), oldest first, each file
 * read up to `ends[path]` (its size when following began) and no more than `maxBytes` of it.
 */
export async function readLogs(
  env: Readonly<Record<string, string>>,
  logs: readonly EventLogName[],
  { maxBytes = READ_BYTES, ends = {} }: { maxBytes?: number; ends?: Record<string, number> } = {},
): Promise<LogTail> {
  const root = stateDir(env);
  const tail: LogTail = { records: [], cut: [] };
  for (const log of logs) {
    const path = eventLogPath(env, log);
    for (const file of [`${path}.1`, path]) {
      const read = await readFileTail(file, {
        root,
        maxBytes,
        ...(ends[file] === undefined ? {} : { end: ends[file] }),
      }).catch(() => null); // not there (yet), or not a plain file
      if (!read) continue;
      if (!read.complete) tail.cut.push(file);
      for (const line of read.lines) {
        const parsed = parseRecord(log, line);
        if (parsed) tail.records.push(parsed);
      }
    }
  }
  // Stable: records of one log that share a millisecond keep their order.
  tail.records.sort((a, b) => a.at - b.at);
  return tail;
}

/** Longest line kept while following; a longer one is skipped. */
const MAX_LINE = 1 << 20;

/**
 * Follows one log: each {@linkcode LogFollower.poll} returns the lines written since the last.
 * A rotated log (renamed to `<path>.1`, a new one started) is read to its end through the file
 * still open, then the new one from its start; a log cut short is read again from its start.
 */
export class LogFollower {
  #file: Deno.FsFile | null = null;
  #ino: number | null = null;
  #offset = 0;
  #pending = "";
  #decoder = new TextDecoder();

  constructor(readonly path: string, readonly root: string) {}

  /** Opens the log as it is now; returns its size, where following starts. */
  async start(): Promise<number> {
    await this.#open(true);
    return this.#offset;
  }

  async #open(atEnd: boolean): Promise<void> {
    try {
      this.#file = await openStateFile(this.path, { root: this.root });
    } catch {
      this.#file = null; // not there yet
      return;
    }
    const info = await this.#file.stat();
    this.#ino = info.ino;
    this.#offset = atEnd ? info.size : 0;
    this.#pending = "";
    await this.#file.seek(this.#offset, Deno.SeekMode.Start);
  }

  /** The complete lines written since the last call. */
  async poll(): Promise<string[]> {
    const lines = await this.#drain();
    const info = await Deno.lstat(this.path).catch(() => null);
    if (!info) return lines; // rotated, and the new log not started yet
    if (this.#file === null || info.ino !== this.#ino) {
      lines.push(...await this.#drain()); // what the old file got before it was renamed
      this.close();
      await this.#open(false);
      lines.push(...await this.#drain());
    } else if (info.size < this.#offset) {
      this.close();
      await this.#open(false);
      lines.push(...await this.#drain());
    }
    return lines;
  }

  async #drain(): Promise<string[]> {
    if (!this.#file) return [];
    const lines: string[] = [];
    const buffer = new Uint8Array(1 << 16);
    for (let n; (n = await this.#file.read(buffer)) !== null;) {
      this.#offset += n;
      const parts = (this.#pending + this.#decoder.decode(buffer.subarray(0, n), { stream: true }))
        .split("\n");
      this.#pending = parts.pop() ?? "";
      if (this.#pending.length > MAX_LINE) this.#pending = "";
      lines.push(...parts);
    }
    return lines;
  }

  /** Closes the open file. */
  close(): void {
    this.#file?.close();
    this.#file = null;
  }
}
