/**
 * The survey `hook crash` makes of every session at session start (see `crash_recovery.ts`): the
 * names in each session directory, what its loop state says, its status and its heartbeat's time.
 *
 * A project holds hundreds of sessions, and nearly all of them are as the last survey left them,
 * so what was found is kept in `.lifeline/survey.json`, each finding with the identity of what it
 * was read from (device, inode, size, modification and change times): a session directory whose
 * `lstat` is the same has the same names, a `ralph.json` whose `lstat` is the same says the same.
 * One `lstat` then stands for a directory listing, and one for an open, a read and a parse. A time
 * less than {@linkcode SETTLE_MS} old is not trusted (a change in the same tick would not show in
 * it), so what changed just now is read again next time. The heartbeat's time and the status are
 * read every time, as before; and without a usable cache the survey is what it always was.
 *
 * Synchronous on purpose: for hundreds of small file operations the sync calls are ~3x faster than
 * async ones, and a hook has nothing else to do meanwhile.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { projectPaths } from "../state/layout.ts";
import { readSmallFileSync, readStateTextSync, writeFileAtomic } from "../state/store.ts";
import { listSessions, type SkippedEntry } from "./session_list.ts";

/** What a loop state (`ralph.json`) says, as far as its staleness goes. */
export type LoopFacts =
  | { parsed: true; active: boolean; lastCheckedAt: unknown; mtimeMs: number | null }
  /** Not a JSON object: it is looked at again under its lock. */
  | { parsed: false; mtimeMs: number | null };

/** What one look at a session directory found. */
export interface SessionSurvey {
  id: string;
  /** The names in the directory. */
  names: Set<string>;
  /** What `ralph.json` says, when there is one. */
  loop?: LoopFacts;
  /** The `status` word, when there is one (`scavenged`, `ended`, `alive`). */
  status?: string;
  /** When it was marked finished (see `markFinished`), epoch ms; then its status is not read. */
  finishedMs?: number;
  /** When the heartbeat was last written (epoch ms), or null. */
  heartbeatMs: number | null;
}

/** The sessions a survey looked at, and the entries of `sessions/` that are not sessions. */
export interface Survey {
  sessions: SessionSurvey[];
  skipped: SkippedEntry[];
}

/** How old a file time must be to be trusted as an identity (coarse clocks tick in 2 s). */
export const SETTLE_MS = 2_000;

const CACHE_VERSION = "2";

/**
 * One session in `.lifeline/survey.json`: the directory's identity and its names then (joined by
 * "/", which no name holds), and `ralph.json`'s identity and what it said then.
 */
interface CacheEntry {
  dir: string;
  names: string;
  loop?: { file: string; parsed: boolean; active?: boolean; lastCheckedAt?: unknown };
}

/** A file's identity, or null when one of its times is too recent to be trusted. */
function identity(info: Deno.FileInfo, now: number): string | null {
  const mtime = info.mtime?.getTime();
  const ctime = info.ctime?.getTime();
  if (mtime === undefined || ctime === undefined || now - Math.max(mtime, ctime) < SETTLE_MS) {
    return null;
  }
  return `${info.dev}:${info.ino}:${info.size}:${mtime}:${ctime}`;
}

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

/** Whether `value` is an entry as {@linkcode saveCache} writes them (the file may be anything). */
function isEntry(value: unknown): value is CacheEntry {
  const entry = value as Partial<CacheEntry> | null;
  if (typeof entry?.dir !== "string" || typeof entry.names !== "string") return false;
  const loop = entry.loop;
  return loop === undefined || (typeof loop === "object" && loop !== null &&
    typeof loop.file === "string" && typeof loop.parsed === "boolean" &&
    (loop.active === undefined || typeof loop.active === "boolean"));
}

/** The kept survey by session id; empty when there is none or it is not one lifeline wrote. */
function readCache(root: string): Record<string, unknown> {
  try {
    const cache = JSON.parse(readStateTextSync(projectPaths(root).surveyCache, { root }));
    if (cache?.version === CACHE_VERSION && typeof cache.sessions === "object") {
      return cache.sessions ?? {};
    }
  } catch {
    // Missing, unreadable or not JSON: survey without it.
  }
  return {};
}

function loopFacts(text: string, mtimeMs: number | null): LoopFacts {
  try {
    const state = JSON.parse(text);
    if (state !== null && typeof state === "object" && !Array.isArray(state)) {
      return {
        parsed: true,
        active: state.active === true,
        lastCheckedAt: state.last_checked_at,
        mtimeMs,
      };
    }
  } catch {
    // Not JSON.
  }
  return { parsed: false, mtimeMs };
}

/** The loop facts of `ralph.json`, from the kept survey when the file is the one it read. */
function surveyLoop(
  root: string,
  path: string,
  { known, now }: { known: CacheEntry["loop"]; now: number },
): { facts: LoopFacts; kept?: NonNullable<CacheEntry["loop"]> } {
  const info = lstatOrNull(path);
  const file = info?.isFile ? identity(info, now) : null;
  const mtimeMs = info?.mtime?.getTime() ?? null;
  if (file !== null && known?.file === file) {
    const facts: LoopFacts = known.parsed
      ? { parsed: true, active: known.active === true, lastCheckedAt: known.lastCheckedAt, mtimeMs }
      : { parsed: false, mtimeMs };
    return { facts, kept: known };
  }
  const facts = loopFacts(readStateTextSync(path, { root }), mtimeMs);
  if (file === null) return { facts };
  return {
    facts,
    kept: facts.parsed
      ? { file, parsed: true, active: facts.active, lastCheckedAt: facts.lastCheckedAt }
      : { file, parsed: false },
  };
}

/**
 * Looks at every session directory under the root: its names, its loop state, its status and its
 * heartbeat's time. `now` (epoch ms) tells which file times are settled enough to keep.
 */
export async function surveySessions(root: string, { now }: { now: number }): Promise<Survey> {
  // Below a linked sessions/ every read is refused, as it always was; nothing is kept then.
  const keep = lstatOrNull(projectPaths(root).sessions)?.isDirectory === true;
  const { survey, kept, changed } = surveyAll(root, keep ? readCache(root) : {}, now);
  if (keep && changed) {
    // A survey that cannot be kept only makes the next one slower.
    await writeFileAtomic(
      projectPaths(root).surveyCache,
      JSON.stringify({ version: CACHE_VERSION, sessions: Object.fromEntries(kept) }) + "\n",
      { root, durable: false },
    ).catch(() => {});
  }
  return survey;
}

function surveyAll(
  root: string,
  cache: Record<string, unknown>,
  now: number,
): { survey: Survey; kept: Map<string, CacheEntry>; changed: boolean } {
  const listing = listSessions(root);
  const kept = new Map<string, CacheEntry>();
  const sessions: SessionSurvey[] = [];
  let changed = false;
  let reused = 0;
  for (const id of listing.ids) {
    const entry = Object.hasOwn(cache, id) ? cache[id] : undefined;
    const known = isEntry(entry) ? entry : undefined;
    const found = surveyOne(root, id, { known, now });
    if (!found) continue; // vanished or unreadable
    sessions.push(found.survey);
    if (found.kept) kept.set(id, found.kept);
    if (found.kept !== known) changed = true;
    else reused++;
  }
  if (reused !== Object.keys(cache).length) changed = true; // sessions gone, or entries dropped
  return { survey: { sessions, skipped: listing.skipped }, kept, changed };
}

/** One session; `kept` is `known` itself when nothing about it changed. */
function surveyOne(
  root: string,
  id: string,
  { known, now }: { known: CacheEntry | undefined; now: number },
): { survey: SessionSurvey; kept?: CacheEntry } | undefined {
  const dir = joinPath(projectPaths(root).sessions, id);
  const dirInfo = lstatOrNull(dir);
  const dirIdentity = dirInfo?.isDirectory ? identity(dirInfo, now) : null;
  let names: Set<string>;
  if (dirIdentity !== null && known?.dir === dirIdentity) {
    names = new Set(known.names === "" ? [] : known.names.split("/"));
  } else {
    names = new Set();
    try {
      for (const inner of Deno.readDirSync(dir)) names.add(inner.name);
    } catch {
      return undefined;
    }
  }
  const survey: SessionSurvey = { id, names, heartbeatMs: null };
  let loop: CacheEntry["loop"];
  try {
    if (names.has("ralph.json")) {
      const read = surveyLoop(root, joinPath(dir, "ralph.json"), { known: known?.loop, now });
      survey.loop = read.facts;
      loop = read.kept;
    }
    if (names.has("finished")) {
      survey.finishedMs = Deno.lstatSync(joinPath(dir, "finished")).mtime?.getTime() ?? 0;
    } else if (names.has("status")) {
      const status = readSmallFileSync(joinPath(dir, "status"));
      if (status !== undefined) survey.status = status.trim();
    }
    if (names.has("heartbeat")) {
      survey.heartbeatMs = Deno.statSync(joinPath(dir, "heartbeat")).mtime?.getTime() ?? null;
    }
  } catch {
    // Raced with a writer or a remover; the next survey sees it.
  }
  if (dirIdentity === null || (names.has("ralph.json") && loop === undefined)) return { survey };
  if (known?.dir === dirIdentity && known.loop === loop) return { survey, kept: known };
  const kept: CacheEntry = { dir: dirIdentity, names: [...names].join("/") };
  return { survey, kept: loop ? { ...kept, loop } : kept };
}
