/**
 * `lifeline hook heartbeat`: on every tool call (PostToolUse, run with `"async": true`), writes the
 * session's heartbeat and keeps `session.json` current. The watcher and the stale-session daemon
 * read these to find a session's pane and to tell a live session from a dead one.
 *
 * @module
 */

import type { Context } from "../lib/core/cli.ts";
import { HOOK_FLAGS_HELP, type HookRequest, runHook } from "../lib/claude/hook_io.ts";
import { logToOwnLog } from "../lib/state/own_log.ts";
import { agentProcess, type ProcessInfo } from "../lib/host/proc.ts";
import { LockTimeoutError } from "../lib/state/store.ts";
import { recordSighting, type SessionRecord } from "../lib/sessions/registry.ts";

export const help = `Usage: lifeline hook heartbeat [--root DIR] [--background]

Claude Code hook for PostToolUse (configure it with "async": true). Writes
sessions/<id>/heartbeat (epoch seconds) and updates sessions/<id>/session.json with the cwd,
transcript path, tmux pane and socket ($TMUX_PANE, $TMUX), the agent's pid, and when the session
was first and last seen. Prints nothing.

It always runs as a background hook: it never waits for a lock. When another heartbeat of the
same session holds session.json, that one is recording the same facts, and this one skips it.

${HOOK_FLAGS_HELP}`;

/**
 * The agent behind this hook call. Asking `ps` costs a few milliseconds, so the answer is reused
 * while the hook's parent stays the same process (the usual case: the agent runs its hooks
 * directly, or through a shell that execs them).
 */
async function findAgent(
  known: SessionRecord | undefined,
  ppid: number,
): Promise<Pick<ProcessInfo, "pid" | "command" | "started"> | undefined> {
  if (
    known?.hook_parent_pid === ppid && typeof known.agent_pid === "number" && known.agent_started
  ) {
    return {
      pid: known.agent_pid,
      command: known.agent_command ?? "",
      started: known.agent_started,
    };
  }
  return await agentProcess(ppid);
}

/** Records the sighting; says nothing to the model. */
export async function handle({ input, root, ctx, lockWaitMs }: HookRequest): Promise<null> {
  try {
    await record({ input, root, ctx, waitMs: await lockWaitMs() });
  } catch (error) {
    if (!(error instanceof LockTimeoutError)) throw error;
    // The heartbeat file is written; another heartbeat holds session.json and is recording the
    // same facts. Background hooks never wait (DESIGN §5), so this one skips it.
    await logToOwnLog(ctx.env, {
      command: "hook heartbeat",
      message: "session.json is busy (another heartbeat is writing it); skipped",
      session: input.session_id,
      root,
    });
  }
  return null;
}

async function record(
  { input, root, ctx, waitMs }: Pick<HookRequest, "input" | "root" | "ctx"> & { waitMs: number },
): Promise<void> {
  await recordSighting({
    sessionId: input.session_id,
    root,
    event: input.hook_event_name,
    cwd: input.cwd,
    transcriptPath: input.transcript_path,
    env: ctx.env,
    hookParentPid: ctx.ppid,
    // Without ps (Windows, minimal containers) the parent pid is still worth recording.
    findAgent: async (known) =>
      await findAgent(known, ctx.ppid) ?? { pid: ctx.ppid, command: "", started: "" },
  }, { now: ctx.now(), waitMs });
}

export function run(ctx: Context): Promise<number> {
  return runHook(ctx, "heartbeat", handle, { background: true });
}
