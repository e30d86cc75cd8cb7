/**
 * The sessions of a project as `status` shows them: each one's heartbeat age, state (the one
 * liveness judgement, `assessSession`) and pane. Finished sessions are counted apart: a project
 * can hold thousands, each judged with one `lstat`.
 *
 * @module
 */

import { describeError } from "../state/store.ts";
import { assessSession, assessSessionSync, type PaneIndex } from "./liveness.ts";
import { listSessions } from "./session_list.ts";

/** One session, as `status --json` shows it. */
export interface SessionRow {
  id: string;
  heartbeat_age: number | null;
  state: string;
  pane: string | null;
  reason: string;
}

/** The sessions of a project. */
export interface SessionsStatus {
  /** Every registered session, finished ones included. */
  sessions: SessionRow[];
  /** The finished ones (ended, or scavenged with the handoff delivered). */
  finished: Set<string>;
  /** The others: the ones whose counters and advice may still be read. */
  open: string[];
}

/** Judges every session of `root`; one that cannot be read is shown as unknown, with why. */
export async function sessionsStatus(
  root: string,
  { now, staleAfterSeconds, panes = new Map(), agentCommands, hostname }: {
    now: number;
    staleAfterSeconds: number;
    panes?: PaneIndex;
    /** Programs that are the agent (`watch.agentCommands`), for what a pane runs. */
    agentCommands?: readonly string[];
    /** This host's name (see `sameHost`). */
    hostname?: string;
  },
): Promise<SessionsStatus> {
  const sessions: SessionRow[] = [];
  const finished = new Set<string>();
  const open: string[] = [];
  const options = {
    now,
    staleAfterSeconds,
    panes,
    withRecord: true,
    ...(agentCommands ? { agentCommands } : {}),
    ...(hostname ? { hostname } : {}),
  };
  for (const id of listSessions(root).ids) {
    let judged;
    try {
      judged = assessSessionSync(root, id, options) ?? await assessSession(root, id, options);
    } catch (error) {
      const reason = `could not be read: ${describeError(error)}`;
      sessions.push({ id, heartbeat_age: null, state: "unknown", pane: null, reason });
      continue;
    }
    if (judged.state !== "unregistered") {
      sessions.push({
        id,
        heartbeat_age: judged.heartbeatAge,
        state: judged.state,
        pane: judged.record?.tmux_pane ?? null,
        reason: judged.reason,
      });
    }
    if (judged.finished) finished.add(id);
    else open.push(id);
  }
  return { sessions, finished, open };
}
