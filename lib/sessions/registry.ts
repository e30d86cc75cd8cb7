/**
 * The session registry that `hook heartbeat` keeps and the watcher and daemon read:
 * `sessions/<id>/heartbeat` (epoch seconds, as `date +%s` writes it) and `sessions/<id>/session.json`.
 *
 * @module
 */

import {
  type Infer,
  looseObject,
  nullable,
  number,
  optional,
  parseShape,
  string,
  union,
} from "../core/shape.ts";
import { sessionPaths } from "../state/layout.ts";
import {
  jsonCodec,
  numberCodec,
  readSmallFileSync,
  readState,
  removeFile,
  updateState,
  writeFileAtomic,
} from "../state/store.ts";

/** `session.json`: where a session runs and how to tell whether it still does (see `shape.ts`). */
export const SESSION_RECORD_SHAPE = looseObject({
  session_id: string(),
  root: string(),
  cwd: nullable(string()),
  transcript_path: nullable(string()),
  /** `$TMUX_PANE`, e.g. `%3`. */
  tmux_pane: nullable(string()),
  /** The tmux server's socket path, from `$TMUX`. */
  tmux_socket: nullable(string()),
  /** The pane's tmux session (`$<id>`) and its server's pid, from `$TMUX`: where to revive. */
  tmux_session: optional(nullable(string())),
  tmux_server_pid: optional(nullable(number())),
  /** The hook's parent pid at the last sighting; the agent is looked up again when it changes. */
  hook_parent_pid: optional(nullable(number())),
  /** The agent process (the hook's parent, past any shell or wrapper), with its identity. */
  agent_pid: nullable(number()),
  agent_command: optional(nullable(string())),
  /**
   * When the agent started, in epoch ms. Records written by earlier versions hold a `ps -o
   * lstart` text in the hook's time zone instead; they are read as such, and replaced at the next
   * heartbeat.
   */
  agent_started: optional(nullable(union([number(), string()]))),
  /** Linux: the exact start identity, `<boot id>/<clock ticks since boot>`. */
  agent_start_id: optional(nullable(string())),
  /**
   * Where the agent's pid means something: the host name and (Linux) the pid namespace's inode
   * of the hook that saw it. A daemon elsewhere (the host of a devcontainer, another machine
   * sharing the project) cannot check the pid, and leaves the session alone.
   */
  agent_host: optional(nullable(string())),
  agent_pid_ns: optional(nullable(number())),
  first_seen: string(),
  last_seen: string(),
  last_event: string(),
});

/** `session.json`. */
export type SessionRecord = Infer<typeof SESSION_RECORD_SHAPE>;

/** Longest path kept (`PATH_MAX`): a longer one is no path of a real session. */
const MAX_PATH = 4096;
/** Longest name kept (an event, a program, a host). */
const MAX_NAME = 255;

function bounded(value: string | null | undefined, max: number): string | null {
  return typeof value === "string" && value.length <= max ? value : null;
}

function shaped(value: string | null | undefined, shape: RegExp): string | null {
  return typeof value === "string" && shape.test(value) ? value : null;
}

/**
 * A record with every field within its bounds, as written and as read: a path longer than a path
 * can be is dropped (a 17 MB `cwd` would make `session.json` larger than a state file may be), a
 * pane is `%<digits>` and a tmux session `$<digits>` (they are typed into tmux commands and shown
 * on terminals), names are short. What does not fit becomes null.
 */
export function boundRecord(record: SessionRecord): SessionRecord {
  return {
    ...record,
    cwd: bounded(record.cwd, MAX_PATH),
    transcript_path: bounded(record.transcript_path, MAX_PATH),
    tmux_pane: shaped(record.tmux_pane, /^%\d{1,10}$/),
    tmux_socket: bounded(record.tmux_socket, MAX_PATH),
    ...(record.tmux_session === undefined
      ? {}
      : { tmux_session: shaped(record.tmux_session, /^\$\d{1,10}$/) }),
    ...(record.agent_command === undefined
      ? {}
      : { agent_command: bounded(record.agent_command, MAX_NAME) }),
    ...(record.agent_host === undefined
      ? {}
      : { agent_host: bounded(record.agent_host, MAX_NAME) }),
    last_event: bounded(record.last_event, 64) ?? "unknown",
  };
}

/** Codec for `session.json`. */
export const sessionRecordCodec = jsonCodec((value) =>
  parseShape(SESSION_RECORD_SHAPE, value).then(boundRecord)
);

/** What one hook call saw of its session. */
export interface SessionSighting {
  sessionId: string;
  root: string;
  event: string;
  cwd?: string | undefined;
  transcriptPath?: string | undefined;
  env: Readonly<Record<string, string>>;
  hookParentPid?: number | undefined;
  agent?: AgentIdentity | undefined;
  /** Where the hook ran (see `thisHost`). */
  host?: { hostname: string; pidNamespace: number | null } | undefined;
}

/** The agent process behind a sighting. */
export interface AgentIdentity {
  pid: number;
  command: string;
  /** Epoch ms, or null when it could not be found out. */
  startedMs: number | null;
  startId?: string | undefined;
}

/** The tmux socket path from `$TMUX` ("<socket>,<server pid>,<session id>"). */
export function tmuxSocketFromEnv(tmux: string | undefined): string | null {
  if (!tmux) return null;
  const socket = tmux.split(",")[0];
  return socket ? socket : null;
}

/** The tmux session (as a target, `$<id>`) and server pid from `$TMUX`, when it names them. */
function tmuxSessionFromEnv(tmux: string | undefined): { session: string; pid: number } | null {
  const match = /,(\d+),(\d+)$/.exec(tmux ?? "");
  return match ? { pid: Number(match[1]), session: `$${match[2]}` } : null;
}

/**
 * The next `session.json` after a sighting: first_seen is kept, everything the sighting knows is
 * updated, and what it does not know keeps its previous value.
 */
export function nextSessionRecord(
  current: SessionRecord | undefined,
  seen: SessionSighting,
  now: number,
): SessionRecord {
  const at = new Date(now).toISOString();
  const pane = seen.env.TMUX_PANE || null;
  const tmuxSession = pane ? tmuxSessionFromEnv(seen.env.TMUX) : null;
  return boundRecord({
    ...current,
    session_id: seen.sessionId,
    root: seen.root,
    cwd: seen.cwd ?? current?.cwd ?? null,
    transcript_path: seen.transcriptPath ?? current?.transcript_path ?? null,
    tmux_pane: pane,
    tmux_socket: pane ? tmuxSocketFromEnv(seen.env.TMUX) : null,
    tmux_session: tmuxSession?.session ?? null,
    tmux_server_pid: tmuxSession?.pid ?? null,
    hook_parent_pid: seen.hookParentPid ?? current?.hook_parent_pid ?? null,
    agent_pid: seen.agent?.pid ?? current?.agent_pid ?? null,
    agent_command: (seen.agent ? seen.agent.command || null : current?.agent_command) ?? null,
    agent_started: (seen.agent ? seen.agent.startedMs : current?.agent_started) ?? null,
    agent_start_id: (seen.agent ? seen.agent.startId : current?.agent_start_id) ?? null,
    agent_host: (seen.host ? seen.host.hostname || null : current?.agent_host) ?? null,
    agent_pid_ns: (seen.host ? seen.host.pidNamespace : current?.agent_pid_ns) ?? null,
    first_seen: current?.first_seen ?? at,
    last_seen: at,
    last_event: seen.event,
  });
}

/**
 * How old `last_seen` may grow before a sighting that changes nothing else rewrites `session.json`
 * anyway. The heartbeat file is the every-call signal; skipping the locked rewrite keeps the hook
 * that runs on every tool call cheap.
 */
const LAST_SEEN_REFRESH_MS = 60_000;

/**
 * What a sighting does to the session's `status`: a SessionEnd ends it, and any other event shows
 * an ended or scavenged session working again, which is then alive. Null: no change.
 */
export function nextStatus(status: string, event: string): "ended" | "alive" | null {
  if (event === "SessionEnd") return status === "ended" ? null : "ended";
  return status === "ended" || status === "scavenged" ? "alive" : null;
}

/**
 * True when `next` differs from `current` only by a `last_seen` that is not due yet, or by the
 * hook's parent (a new shell on every call when the client runs hooks through one that does not
 * exec them).
 */
function sameRecord(current: SessionRecord, next: SessionRecord, now: number): boolean {
  if (now - Date.parse(current.last_seen) >= LAST_SEEN_REFRESH_MS) return false;
  // The hook's parent is recorded once, so that the next call can reuse the agent found behind
  // it (a record without one, from an older version or another writer, had every call look the
  // agent up again); a parent that changes on every call (a shell per hook) is not rewritten.
  if (typeof current.hook_parent_pid !== "number" && typeof next.hook_parent_pid === "number") {
    return false;
  }
  const volatile = { last_seen: "", hook_parent_pid: null };
  return JSON.stringify({ ...current, ...volatile }) === JSON.stringify({ ...next, ...volatile });
}

/** The session's `status` word; "" when there is none (bounded read, no symlink followed). */
export function readSessionStatus(root: string, sessionId: string): string {
  return readSmallFileSync(sessionPaths(root, sessionId).status)?.trim() ?? "";
}

/**
 * Whether `dir` lists `name`. A hook asks so before reading a file that is usually missing: the
 * first exception a process meets costs ~0.3 ms, and a missing file is one.
 */
function hasEntry(dir: string, name: string): boolean {
  try {
    for (const entry of Deno.readDirSync(dir)) if (entry.name === name) return true;
  } catch {
    // Unreadable: the read that follows would find nothing either.
  }
  return false;
}

/** What a session's `finished` mark says. */
export interface FinishedMark {
  /** The status word it finished with. */
  word: "ended" | "scavenged";
  /** When it was marked, epoch ms. */
  atMs: number | null;
}

/** The words a mark holds, by its size: a mark is read with one `lstat`. */
const MARK_WORDS = new Map<number, FinishedMark["word"]>([[6, "ended"], [10, "scavenged"]]);

/**
 * Marks a session finished: `sessions/<id>/finished` holds the status word it finished with
 * (`ended`, or `scavenged` once its handoff was delivered). Whoever finishes a session writes the
 * mark last, and whoever brings one back removes it first, so that a mark, when there, can be
 * trusted alone: a project with thousands of finished sessions is judged with one `lstat` each.
 * It is a cache (no fsync): without it, the status and the handoff's marker say the same, slower.
 */
export async function markFinished(
  root: string,
  sessionId: string,
  word: FinishedMark["word"],
): Promise<void> {
  await writeFileAtomic(sessionPaths(root, sessionId).finished, `${word}\n`, {
    root,
    durable: false,
  });
}

/** Removes a session's `finished` mark (see {@linkcode markFinished}). */
export async function clearFinished(root: string, sessionId: string): Promise<void> {
  try {
    await removeFile(sessionPaths(root, sessionId).finished, { root });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** The `finished` mark in a session directory, or undefined (see {@linkcode markFinished}). */
export function readFinishedSync(sessionDir: string): FinishedMark | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(`${sessionDir}/finished`);
  } catch {
    return undefined;
  }
  if (!info.isFile) return undefined;
  const word = MARK_WORDS.get(info.size) ??
    readSmallFileSync(`${sessionDir}/finished`, 64)?.trim();
  if (word !== "ended" && word !== "scavenged") return undefined;
  return { word, atMs: info.mtime?.getTime() ?? null };
}

/** What {@linkcode recordSighting} did. */
export interface SightingResult {
  record: SessionRecord | undefined;
  /** The status it rewrote (see {@linkcode nextStatus}), with the word it replaced. */
  status: { from: string; to: "ended" | "alive" } | null;
}

/**
 * Writes the heartbeat and keeps `session.json` and `status` current. `findAgent` gets the record
 * as it was and identifies the agent (it may reuse what the record already knows). The heartbeat
 * is written without fsync: it is rewritten on every call, and a lost one costs nothing.
 */
export async function recordSighting(
  seen: Omit<SessionSighting, "agent"> & {
    findAgent: (known: SessionRecord | undefined) => Promise<AgentIdentity>;
  },
  { now, waitMs }: { now: number; waitMs: number },
): Promise<SightingResult> {
  const paths = sessionPaths(seen.root, seen.sessionId);
  // The two files are independent, so they are written at once. Both must settle before
  // returning, or the process could exit in the middle of the other write.
  const [beat, update] = await Promise.allSettled([
    writeFileAtomic(paths.heartbeat, numberCodec.format(Math.floor(now / 1000)), {
      root: seen.root,
      durable: false,
    }),
    updateRegistry(seen, { now, waitMs }),
  ]);
  if (beat.status === "rejected") throw beat.reason;
  if (update.status === "rejected") throw update.reason;
  return update.value;
}

async function updateRegistry(
  seen: Omit<SessionSighting, "agent"> & {
    findAgent: (known: SessionRecord | undefined) => Promise<AgentIdentity>;
  },
  { now, waitMs }: { now: number; waitMs: number },
): Promise<SightingResult> {
  const paths = sessionPaths(seen.root, seen.sessionId);
  const known = await readState(paths.session, sessionRecordCodec, { root: seen.root });
  const current = known.kind === "ok" ? known.value : undefined;
  const agent = await seen.findAgent(current);
  const status = hasEntry(paths.dir, "status") ? readSessionStatus(seen.root, seen.sessionId) : "";
  if (current && !nextStatus(status, seen.event)) {
    if (sameRecord(current, nextSessionRecord(current, { ...seen, agent }, now), now)) {
      return { record: current, status: null };
    }
  }
  // The status changes under the registry's lock, so the pruner (which takes the same lock)
  // never deletes a session that is coming back to life.
  let changed: SightingResult["status"] = null;
  const { value } = await updateState(paths.session, sessionRecordCodec, async (locked) => {
    const from = readSessionStatus(seen.root, seen.sessionId);
    const to = nextStatus(from, seen.event);
    if (to === "alive") await clearFinished(seen.root, seen.sessionId); // first: see markFinished
    if (to) {
      await writeFileAtomic(paths.status, `${to}\n`, { root: seen.root });
      changed = { from, to };
    }
    if (to === "ended") await markFinished(seen.root, seen.sessionId, "ended");
    return nextSessionRecord(locked, { ...seen, agent }, now);
  }, { root: seen.root, waitMs, now });
  return { record: value, status: changed };
}

/**
 * Reads a session's `session.json` (lockless); undefined when missing or unreadable (corrupt, a
 * directory, not permitted).
 */
export async function readSessionRecord(
  root: string,
  sessionId: string,
): Promise<SessionRecord | undefined> {
  const result = await readState(sessionPaths(root, sessionId).session, sessionRecordCodec, {
    root,
  }).catch(() => undefined);
  return result?.kind === "ok" ? result.value : undefined;
}

/** A session's last heartbeat in epoch seconds, or undefined when missing or unreadable. */
export async function readHeartbeat(root: string, sessionId: string): Promise<number | undefined> {
  const result = await readState(sessionPaths(root, sessionId).heartbeat, numberCodec, { root });
  return result.kind === "ok" ? result.value : undefined;
}

/** `end.json`: why a session ended (SessionEnd's `reason`) and when, in epoch ms. */
export interface SessionEndRecord {
  reason: string;
  at: number;
}

const sessionEndCodec = jsonCodec((value): SessionEndRecord => {
  const { reason, at } = (value ?? {}) as Record<string, unknown>;
  if (typeof reason !== "string" || typeof at !== "number") throw new Error("not an end record");
  return { reason: reason.slice(0, 100), at };
});

/**
 * Records why the session ended. Written on its own, outside the registry's lock, so that a
 * SessionEnd whose registry update is skipped (another heartbeat holds the lock) still leaves it.
 */
export async function recordSessionEnd(
  root: string,
  sessionId: string,
  { reason, now }: { reason: string; now: number },
): Promise<void> {
  const record: SessionEndRecord = { reason: reason.slice(0, 100), at: now };
  await writeFileAtomic(sessionPaths(root, sessionId).end, sessionEndCodec.format(record), {
    root,
  });
}

/** A session's `end.json`, or undefined when it has none (or an unreadable one). */
export async function readSessionEnd(
  root: string,
  sessionId: string,
): Promise<SessionEndRecord | undefined> {
  const result = await readState(sessionPaths(root, sessionId).end, sessionEndCodec, { root })
    .catch(() => undefined);
  return result?.kind === "ok" ? result.value : undefined;
}
