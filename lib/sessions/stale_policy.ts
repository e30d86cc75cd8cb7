/**
 * The one liveness judgement of a registered session, shared by `status`, `daemon stale` and
 * `hook crash` (spec/error-recovery.md §5.3, DESIGN §7).
 *
 * A session's `status` file carries its lifecycle: `ended` (its SessionEnd was seen), `scavenged`
 * (the daemon rescued its findings), `alive` or nothing. A scavenged session stays scavenged until
 * its own heartbeat hook sees it working again and rewrites the status: the daemon never judges
 * the same death twice, and a scavenged session is never called alive.
 *
 * Otherwise a session is dead when its heartbeat is older than the limit and it has lost its host:
 * its agent process is dead or is now another program, or (with no process to go by) its tmux pane
 * is gone. A fresh heartbeat, or a live agent process, is alive. When nothing can be checked, the
 * session is not judged dead: never scavenge the living.
 *
 * Facts cost file reads and process lookups, so the judgement asks for them as it needs them: an
 * ended or scavenged session is judged from its status file alone. Pure: the asking is an action.
 *
 * @module
 */

/** What could be found out about a session's host. */
export interface HostEvidence {
  /**
   * The recorded pane: still there and running the agent, there (running something else), gone,
   * or unknown (none recorded, tmux unreachable or not answering).
   */
  pane: "running" | "present" | "gone" | "unknown";
  /**
   * The recorded agent process; `elsewhere` when it was recorded on another host or in another
   * pid namespace (a container), where its pid cannot be looked up from here.
   */
  process: "alive" | "dead" | "reused" | "unknown" | "elsewhere";
}

/** What the session's own files say about its lifecycle. */
export interface SessionLifecycle {
  /** The `status` file's text, trimmed; "" when there is none. */
  status: string;
  /** A scavenged session's handoff was offered to a later session. */
  delivered?: boolean | undefined;
  /** When the `status` file was last written, epoch ms. */
  statusChangedMs?: number | null | undefined;
}

/** What was seen of the session when it was judged. */
export interface SessionObservation {
  /** Its last heartbeat in epoch seconds; null when it has none. */
  heartbeat?: number | null | undefined;
  /** Its `session.json` could be read. */
  registered?: boolean | undefined;
  host?: HostEvidence | undefined;
}

/**
 * A fact the judgement needs before it can decide: `heartbeat` is the heartbeat and whether a
 * `session.json` is there; `host` reads the registry and looks at the pane and the process.
 */
export type SessionFact = "delivered" | "statusChanged" | "heartbeat" | "host";

/** The states a session can be in. */
export type SessionState =
  | "alive"
  | "dead"
  | "unknown"
  | "scavenged"
  | "ended"
  /** No `session.json` and no heartbeat: not a session lifeline registered. */
  | "unregistered";

/** The judgement. */
export interface SessionJudgement {
  state: SessionState;
  reason: string;
  /** Ended, or scavenged with the handoff delivered: nothing more will happen to it. */
  finished: boolean;
  /** Seconds since the last heartbeat, when it was looked at. */
  heartbeatAge: number | null;
}

/** What the engine does next. */
export type SessionAction =
  | { kind: "learn"; facts: SessionFact[] }
  | { kind: "scavenge"; reason: string }
  | { kind: "prune"; reason: string };

/** Settings of the judgement. */
export interface SessionOptions {
  now: number;
  staleAfterSeconds: number;
  /** Finished sessions idle for longer than this are pruned; absent: no pruning is considered. */
  pruneAfterSeconds?: number | undefined;
}

function ageOf(heartbeat: number | null | undefined, now: number): number | null {
  return typeof heartbeat === "number" ? Math.max(0, Math.floor(now / 1000) - heartbeat) : null;
}

/** The judgement of a finished session, with pruning once it is old enough. */
function finishedSession(
  judgement: SessionJudgement,
  lifecycle: SessionLifecycle,
  seen: SessionObservation,
  options: SessionOptions,
): { state: SessionJudgement; actions: SessionAction[] } {
  const limit = options.pruneAfterSeconds;
  if (limit === undefined) return { state: judgement, actions: [] };
  if (lifecycle.statusChangedMs === undefined) {
    return { state: judgement, actions: [{ kind: "learn", facts: ["statusChanged"] }] };
  }
  const changed = lifecycle.statusChangedMs;
  const idle = Math.floor((options.now - (changed ?? options.now)) / 1000);
  if (changed === null || idle <= limit) return { state: judgement, actions: [] };
  // Old enough; and its heartbeat must be as old: never prune a session that still beats.
  if (seen.heartbeat === undefined) {
    return { state: judgement, actions: [{ kind: "learn", facts: ["heartbeat"] }] };
  }
  const beatAge = ageOf(seen.heartbeat, options.now);
  const state = { ...judgement, heartbeatAge: beatAge };
  if (beatAge !== null && beatAge <= limit) return { state, actions: [] };
  return {
    state,
    actions: [{ kind: "prune", reason: `${judgement.state} and idle for ${idle}s` }],
  };
}

/**
 * Judges one session from its lifecycle and what was seen of it. Returns `learn` when a fact is
 * missing (call again with it), `scavenge` for a session that died unrescued, `prune` for a
 * finished one idle past `pruneAfterSeconds`.
 */
export function decideSession(
  lifecycle: SessionLifecycle,
  seen: SessionObservation,
  options: SessionOptions,
): { state: SessionJudgement; actions: SessionAction[] } {
  const none = { heartbeatAge: ageOf(seen.heartbeat, options.now) };
  if (lifecycle.status === "ended") {
    const ended = { state: "ended", reason: "its session ended", finished: true, ...none } as const;
    return finishedSession(ended, lifecycle, seen, options);
  }
  if (lifecycle.status === "scavenged") {
    if (lifecycle.delivered === undefined) {
      return {
        state: { state: "scavenged", reason: "scavenged", finished: false, ...none },
        actions: [{ kind: "learn", facts: ["delivered"] }],
      };
    }
    const scavenged = {
      state: "scavenged",
      reason: lifecycle.delivered
        ? "its handoff (handoffs/scavenged.md) was delivered to a later session"
        : "its handoff is in handoffs/scavenged.md",
      finished: lifecycle.delivered,
      ...none,
    } as const;
    if (scavenged.finished) return finishedSession(scavenged, lifecycle, seen, options);
    // Not delivered yet: it is listed, with its heartbeat's age.
    const facts: SessionFact[] = seen.heartbeat === undefined ? ["heartbeat"] : [];
    return { state: scavenged, actions: facts.length ? [{ kind: "learn", facts }] : [] };
  }
  if (seen.heartbeat === undefined || seen.registered === undefined) {
    return {
      state: { state: "unknown", reason: "not looked at", finished: false, ...none },
      actions: [{ kind: "learn", facts: ["heartbeat"] }],
    };
  }
  const age = none.heartbeatAge;
  if (!seen.registered && age === null) {
    return {
      state: {
        state: "unregistered",
        reason: "no session.json and no heartbeat",
        finished: false,
        ...none,
      },
      actions: [],
    };
  }
  if (age !== null && age <= options.staleAfterSeconds) {
    return {
      state: { state: "alive", reason: `heartbeat ${age}s ago`, finished: false, ...none },
      actions: [],
    };
  }
  if (!seen.host) {
    return {
      state: { state: "unknown", reason: "its host was not checked", finished: false, ...none },
      actions: [{ kind: "learn", facts: ["host"] }],
    };
  }
  const judged = judgeHost(age, seen.host);
  const state = { ...judged, finished: false, ...none };
  return {
    state,
    actions: judged.state === "dead" ? [{ kind: "scavenge", reason: judged.reason }] : [],
  };
}

/**
 * A session with a stale heartbeat, judged by its host. A live agent process wins over a pane; a
 * pane that still runs the agent wins over a process that is gone (the agent's own process may not
 * be the one recorded); what cannot be checked from here is not dead.
 */
function judgeHost(
  age: number | null,
  host: HostEvidence,
): { state: "alive" | "dead" | "unknown"; reason: string } {
  const stale = age === null ? "no heartbeat" : `no heartbeat for ${age}s`;
  if (host.process === "elsewhere") {
    return {
      state: "unknown",
      reason: `${stale}, but its agent runs on another host or in another pid namespace (a ` +
        "container?), where its process cannot be checked from here",
    };
  }
  if (host.process === "alive") {
    return {
      state: "alive",
      reason: `${stale}, but its host is still there: its agent process runs (a long command?)`,
    };
  }
  if (host.pane === "gone") return { state: "dead", reason: `${stale} and its tmux pane is gone` };
  if (host.pane === "running" && (host.process === "dead" || host.process === "reused")) {
    return {
      state: "unknown",
      reason: `${stale}; the agent process recorded is gone, but its tmux pane still runs the ` +
        "agent (its process is not the one recorded, or another session runs there)",
    };
  }
  if (host.process === "dead") {
    return { state: "dead", reason: `${stale} and its agent process is gone` };
  }
  if (host.process === "reused") {
    return { state: "dead", reason: `${stale} and its pid now belongs to another program` };
  }
  if (host.pane === "present" || host.pane === "running") {
    return {
      state: "alive",
      reason: `${stale}, but its host is still there: its tmux pane is open (a long command?)`,
    };
  }
  return {
    state: "unknown",
    reason: `${stale}, and neither its pane nor its process can be checked`,
  };
}
