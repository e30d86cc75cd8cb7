/**
 * What a hook call tells about its session, recorded: `hook heartbeat` on every tool call, and
 * `hook crash` when a session starts (a resumed one is alive again before the scan, the daemon or
 * the pruner look at it). One place, so both record the same facts the same way.
 *
 * @module
 */

import type { HookRequest } from "../claude/hook_io.ts";
import { HOOK_NAMES } from "../claude/hook_names.ts";
import { importLater } from "../core/lazy.ts";
import { agentProcess, lookupProcess, pidNamespace } from "../host/proc.ts";
import type * as RecoveryLog from "../state/recovery_log.ts";
import {
  type AgentIdentity,
  recordSighting,
  type SessionRecord,
  type SightingResult,
} from "./registry.ts";

/**
 * The agent behind this hook call. The answer is reused while the hook's parent stays the same
 * process (the agent runs its hooks directly, or through a shell that execs them), or is a new
 * shell whose parent is the agent known (a shell per call);
 * otherwise it is looked up again (on Linux, a few reads of `/proc`: no process is spawned), with
 * the agent commands of the user's config. A record from an earlier version, whose start time is
 * a text, is looked up again and so migrated.
 */
async function findAgent(
  known: SessionRecord | undefined,
  ppid: number,
  agentCommands: () => Promise<readonly string[]>,
): Promise<AgentIdentity> {
  if (typeof known?.agent_pid === "number" && typeof known.agent_started === "number") {
    const reused = {
      pid: known.agent_pid,
      command: known.agent_command ?? "",
      startedMs: known.agent_started,
      startId: known.agent_start_id ?? undefined,
    };
    if (known.hook_parent_pid === ppid) return reused;
    // A shell per hook call (the client runs hooks with `sh -c`): a new parent each time, whose
    // own parent is the agent already known. One read of /proc says so; no walk, no config.
    const parent = await lookupProcess(ppid);
    if (parent.kind === "running" && parent.info.ppid === known.agent_pid) return reused;
  }
  const agent = await agentProcess(ppid, {
    agentCommands: await agentCommands(),
    hookNames: HOOK_NAMES,
  });
  // Without a way to look processes up (Windows), the parent pid is still worth recording.
  return agent ?? { pid: ppid, command: "", startedMs: null };
}

/**
 * Writes the heartbeat and keeps `session.json` and `status` current for the session of
 * `request` (see `recordSighting`); a session the daemon had scavenged that shows life again is
 * logged as revived.
 */
export async function sightSession(
  { input, root, ctx, config }: Pick<HookRequest, "input" | "root" | "ctx" | "config">,
  { waitMs }: { waitMs: number },
): Promise<SightingResult> {
  const now = ctx.now();
  const sighting = await recordSighting({
    sessionId: input.session_id,
    root,
    event: input.hook_event_name,
    cwd: input.cwd,
    transcriptPath: input.transcript_path,
    env: ctx.env,
    hookParentPid: ctx.ppid,
    host: { hostname: ctx.hostname().slice(0, 255), pidNamespace: pidNamespace() },
    findAgent: (known) =>
      findAgent(known, ctx.ppid, async () => (await config()).watch.agentCommands),
  }, { now, waitMs });
  if (sighting.status?.from === "scavenged") {
    const { logRecovery } = await importLater<typeof RecoveryLog>(
      "../state/recovery_log.ts",
      import.meta.url,
    ); // rarely needed
    await logRecovery(root, {
      ts: new Date(now).toISOString(),
      session: input.session_id,
      kind: "stale_session",
      action: "revived",
      target: `sessions/${input.session_id}`,
      result: "its hooks ran again after it was scavenged; marked alive",
    });
  }
  return sighting;
}
