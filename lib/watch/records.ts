/**
 * The I/O behind the watcher's first signal: which registered session runs in a pane
 * (`sessions/<id>/session.json`, written by `hook heartbeat`), and what its records say: the
 * StopFailure `hook track` kept and the transcript's last 256 KiB, read without a lock and
 * tolerant of a torn last line and of a missing or lagging file.
 *
 * @module
 */

import { readTailLines } from "../claude/transcript.ts";
import { descendsFrom, lookupProcess, recordedProcessState } from "../host/proc.ts";
import type { PaneInfo, ServerIdentity } from "../host/tmux.ts";
import { readSessionRecord, readSessionStatus, type SessionRecord } from "../sessions/registry.ts";
import { listSessions } from "../sessions/session_list.ts";
import { sessionPaths } from "../state/layout.ts";
import { readStateText } from "../state/store.ts";
import {
  readTranscriptTail,
  type RecordSignal,
  recordSignal,
  type StopFailureRecord,
} from "./records_policy.ts";

/** How much of a transcript's end is read. */
export const TRANSCRIPT_TAIL_BYTES = 256 << 10;

/** A registered session joined to the pane it runs in. */
export interface JoinedSession {
  root: string;
  sessionId: string;
  record: SessionRecord;
  /**
   * The record's agent process runs inside the pane and is the one recorded (its start time
   * matches): only then are the session's records taken to describe what the pane shows.
   */
  verified: boolean;
}

/** Every registered session of the roots that names a tmux pane, read once per scan. */
export async function registeredPanes(
  roots: readonly string[],
): Promise<{ root: string; record: SessionRecord }[]> {
  const found: { root: string; record: SessionRecord }[] = [];
  for (const root of roots) {
    for (const id of listSessions(root).ids) {
      // Unreadable: that session is not joined; the others still are.
      const record = await readSessionRecord(root, id);
      if (record?.tmux_pane) found.push({ root, record });
    }
  }
  return found;
}

async function sameSocket(a: string, b: string): Promise<boolean> {
  if (a === b) return true;
  const real = async (path: string) => await Deno.realPath(path).catch(() => path);
  return await real(a) === await real(b);
}

/**
 * The registered session that runs in `pane`: it names this pane on this server, and its agent
 * process still runs inside the pane. A record whose pane id now belongs to another process is
 * not joined (pane ids are recycled when a server restarts). The newest sighting wins.
 */
export async function joinSession(
  pane: PaneInfo,
  server: ServerIdentity,
  registered: readonly { root: string; record: SessionRecord }[],
): Promise<JoinedSession | null> {
  const candidates = [];
  for (const { root, record } of registered) {
    if (record.tmux_pane !== pane.id || !record.tmux_socket) continue;
    // A session that ended (its SessionEnd was seen: /clear, exit) or was rescued as dead no
    // longer runs in the pane, whatever its records say.
    if (["ended", "scavenged"].includes(readSessionStatus(root, record.session_id))) continue;
    if (!(await sameSocket(record.tmux_socket, server.socketPath))) continue;
    let verified = false;
    if (typeof record.agent_pid === "number") {
      const inside = await descendsFrom(record.agent_pid, pane.pid);
      if (inside === false) continue;
      if (inside === null && (await lookupProcess(record.agent_pid)).kind === "gone") continue;
      verified = inside === true && await recordedProcessState({
            pid: record.agent_pid,
            started: record.agent_started,
            startId: record.agent_start_id,
          }) === "alive";
    }
    candidates.push({ root, sessionId: record.session_id, record, verified });
  }
  candidates.sort((a, b) => b.record.last_seen.localeCompare(a.record.last_seen));
  return candidates[0] ?? null;
}

async function readStopFailure(path: string, root: string): Promise<StopFailureRecord | null> {
  try {
    const value = JSON.parse(await readStateText(path, { root, maxBytes: 64 << 10 }));
    if (typeof value?.ts !== "string" || typeof value?.error !== "string") return null;
    return {
      ts: value.ts,
      error: value.error,
      ...(typeof value.message === "string" ? { message: value.message.slice(0, 2000) } : {}),
    };
  } catch {
    return null; // missing, being replaced, or not ours: no record
  }
}

/** What a joined session's records say. */
export async function readRecords(
  joined: JoinedSession,
  { localZone }: { localZone: string },
): Promise<RecordSignal> {
  const stopFailure = await readStopFailure(
    sessionPaths(joined.root, joined.sessionId).stopFailure,
    joined.root,
  );
  let tail = null;
  const transcript = joined.record.transcript_path;
  if (transcript) {
    try {
      tail = readTranscriptTail(await readTailLines(transcript, TRANSCRIPT_TAIL_BYTES));
    } catch {
      tail = null; // missing or unreadable: the StopFailure record alone
    }
  }
  return recordSignal(stopFailure, tail, { localZone });
}
