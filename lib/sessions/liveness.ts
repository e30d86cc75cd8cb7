/**
 * Whether a registered session's host is still there: its tmux pane, and its agent process
 * (pid plus start time, so a reused pid is caught). Shared by the daemon and `status`.
 *
 * @module
 */

import type { HostEvidence } from "./stale_policy.ts";
import { recordedProcessState } from "../host/proc.ts";
import type { SessionRecord } from "./registry.ts";
import { listPanes, TmuxError } from "../host/tmux.ts";

/** Live panes per tmux socket, looked up once per round. */
export type PaneIndex = Map<string, Set<string> | "unknown">;

async function paneEvidence(record: SessionRecord | undefined, index: PaneIndex) {
  if (!record?.tmux_pane || !record.tmux_socket) return "unknown" as const;
  let panes = index.get(record.tmux_socket);
  if (panes === undefined) {
    try {
      panes = new Set((await listPanes({ socketPath: record.tmux_socket })).map((p) => p.id));
    } catch (error) {
      if (!(error instanceof TmuxError)) throw error;
      panes = "unknown"; // tmux missing or broken: no evidence either way
    }
    index.set(record.tmux_socket, panes);
  }
  if (panes === "unknown") return "unknown" as const;
  return panes.has(record.tmux_pane) ? "present" as const : "gone" as const;
}

/** What can be found out about a session's host. */
export async function hostEvidence(
  record: SessionRecord | undefined,
  index: PaneIndex,
): Promise<HostEvidence> {
  const process = typeof record?.agent_pid === "number"
    ? await recordedProcessState({ pid: record.agent_pid, started: record.agent_started })
    : "unknown";
  return { pane: await paneEvidence(record, index), process };
}
