/**
 * Whether `daemon stale --revive` resumes a session it has just scavenged, in a new tmux window
 * (`claude --resume <id>`). Reviving is for sessions that died, never for one the user ended:
 * once per session at most, only for an agent that ran in tmux, never after a SessionEnd that
 * says the user quit (`prompt_input_exit`: /exit or Ctrl-D; `logout`; `clear`), never when the
 * project's SessionEnd is not recorded at all (a quit would then look like a death), and never
 * when a session of the project started after this one died (the user has moved on). Pure.
 *
 * @module
 */

/** SessionEnd reasons that mean the user ended the session on purpose. */
export const ENDED_ON_PURPOSE: readonly string[] = ["prompt_input_exit", "logout", "clear"];

/** The session's revive history. */
export interface ReviveState {
  /** It was revived before (`revived.json`). */
  revived: boolean;
}

/** What is known of a session that was just scavenged. */
export interface ScavengedSession {
  /** Its pane and tmux socket were recorded: its agent ran in tmux. */
  inTmux: boolean;
  /** Its last heartbeat, epoch seconds; null when it has none. */
  heartbeat: number | null;
  /** Its recorded SessionEnd (`end.json`), if any: the reason, and when (epoch ms). */
  end: { reason: string; at: number } | null;
  /** A SessionEnd hook of the project runs `lifeline hook heartbeat`, so a quit is recorded. */
  endsRecorded: boolean;
  /** A live session of the project that started after this one's last heartbeat, if any. */
  newerLive: string | null;
}

/** What the engine does. */
export type ReviveAction =
  | { kind: "open_window" }
  | { kind: "skip"; reason: string };

/** Settings of the decision. */
export interface ReviveOptions {
  /** `stale.revive` of the project, or `--revive`. */
  enabled: boolean;
}

/** A SessionEnd the session did not work past: the last thing it did was to end. */
function endedOnPurpose(session: ScavengedSession): string | null {
  const { end, heartbeat } = session;
  if (!end || !ENDED_ON_PURPOSE.includes(end.reason)) return null;
  // The SessionEnd's own heartbeat is written in the same second; a later one means it was
  // resumed after it ended, and that ending no longer speaks for it.
  const workedAfter = heartbeat !== null && heartbeat > Math.floor(end.at / 1000) + 1;
  return workedAfter ? null : end.reason;
}

/**
 * Decides for one scavenged session. Nothing at all when reviving is off; otherwise one action:
 * open the window (and the session counts as revived), or skip, with the reason.
 */
export function decideRevive(
  state: ReviveState,
  session: ScavengedSession,
  { enabled }: ReviveOptions,
): { state: ReviveState; actions: ReviveAction[] } {
  if (!enabled) return { state, actions: [] };
  const skip = (reason: string) => ({ state, actions: [{ kind: "skip", reason } as const] });
  if (state.revived) return skip("it was revived once already");
  if (!session.inTmux) return skip("its agent did not run in tmux");
  const reason = endedOnPurpose(session);
  if (reason) return skip(`it was ended on purpose (SessionEnd: ${reason})`);
  if (!session.endsRecorded) {
    return skip(
      "no SessionEnd hook runs `lifeline hook heartbeat`, so a session you quit cannot be told " +
        "from one that died",
    );
  }
  if (session.newerLive) {
    return skip(`a newer session of the project is alive (${session.newerLive})`);
  }
  return { state: { revived: true }, actions: [{ kind: "open_window" }] };
}
