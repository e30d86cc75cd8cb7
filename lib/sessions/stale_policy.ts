/**
 * When a session counts as dead (spec/error-recovery.md §5.3, DESIGN §7): its heartbeat is older
 * than the limit and it has lost its host: its tmux pane is gone, or its agent process is dead or
 * is now another program. A fresh heartbeat, or a live pane with a live process, is alive. When
 * nothing can be checked, the session is not judged dead: never scavenge the living. Pure.
 *
 * @module
 */

/** What the daemon could find out about a session's host. */
export interface HostEvidence {
  /** The recorded pane: still there, gone, or unknown (none recorded, tmux unreachable). */
  pane: "present" | "gone" | "unknown";
  /** The recorded agent process. */
  process: "alive" | "dead" | "reused" | "unknown";
}

/** The judgement. */
export type Liveness =
  | { state: "alive"; reason: string }
  | { state: "dead"; reason: string }
  | { state: "unknown"; reason: string };

/** Judges one session from its heartbeat age and its host. */
export function judgeSession(
  heartbeatAgeSeconds: number | null,
  host: HostEvidence,
  staleAfterSeconds: number,
): Liveness {
  if (heartbeatAgeSeconds !== null && heartbeatAgeSeconds <= staleAfterSeconds) {
    return { state: "alive", reason: `heartbeat ${heartbeatAgeSeconds}s ago` };
  }
  const age = heartbeatAgeSeconds === null
    ? "no heartbeat"
    : `no heartbeat for ${heartbeatAgeSeconds}s`;
  if (host.pane === "gone") return { state: "dead", reason: `${age} and its tmux pane is gone` };
  if (host.process === "dead") {
    return { state: "dead", reason: `${age} and its agent process is gone` };
  }
  if (host.process === "reused") {
    return { state: "dead", reason: `${age} and its pid now belongs to another program` };
  }
  if (host.pane === "present" || host.process === "alive") {
    return { state: "alive", reason: `${age}, but its host is still there (a long command?)` };
  }
  return {
    state: "unknown",
    reason: `${age}, and neither its pane nor its process can be checked`,
  };
}
