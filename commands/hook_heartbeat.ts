/**
 * `lifeline hook heartbeat`: on every tool call (PostToolUse, run with `"async": true`), writes the
 * session's heartbeat and keeps `session.json` current. The watcher and the stale-session daemon
 * read these to find a session's pane and to tell a live session from a dead one.
 *
 * @module
 */

import type { Context } from "../lib/core/cli.ts";
import {
  HOOK_FLAGS_HELP,
  type HookRequest,
  isEvent,
  logHookProblem,
  runHook,
} from "../lib/claude/hook_io.ts";
import { registerRoot } from "../lib/state/roots.ts";
import { LockTimeoutError } from "../lib/state/store.ts";
import { recordSessionEnd } from "../lib/sessions/registry.ts";
import { sightSession } from "../lib/sessions/sighting.ts";

export const help = `Usage: lifeline hook heartbeat [--root DIR] [--background]

Claude Code hook for PostToolUse (configure it with "async": true). Writes
sessions/<id>/heartbeat (epoch seconds) and keeps sessions/<id>/session.json current: the cwd,
transcript path, tmux pane and socket ($TMUX_PANE, $TMUX), the agent's pid and start time (the
nearest ancestor that is an agent command, watch.agentCommands, past shells, wrappers such as
timeout, env, nice, nohup, strace, and launchers of the hook such as the npm deno shim), the
host name and pid namespace that pid belongs to, and when the session was first and last seen (last_seen is refreshed at most once a minute when nothing else changed).
Prints nothing.

A session that \`lifeline daemon stale\` scavenged, or that had ended, is marked alive again
(sessions/<id>/status). Also added to SessionEnd, it marks the session ended, so the daemon leaves
it alone and it is pruned once old, and records why it ended (sessions/<id>/end.json): a session
you quit (/exit, Ctrl-D, /clear, logout) is never revived by \`daemon stale --revive\`.

The first time it sees a project it records its root in lifeline's state directory
(roots/<hash>.json), so that \`daemon stale\` and \`status\` without --root find it; after that it
costs one lstat.

It always runs as a background hook: it never waits for a lock. When another heartbeat of the
same session holds session.json, that one is recording the same facts, and this one skips it.

${HOOK_FLAGS_HELP}`;

/** Records the sighting (and the project's root, when it is new); says nothing to the model. */
export async function handle(request: HookRequest): Promise<null> {
  const { input, root, ctx, lockWaitMs } = request;
  // The registry of roots is the daemon's to read, not this session's: its trouble is logged
  // and the heartbeat goes on.
  const registering = registerRoot(ctx.env, root, { now: ctx.now() }).catch((error) =>
    logHookProblem(ctx.env, {
      command: "hook heartbeat",
      message: "could not record the project in the registry of roots",
      error,
      root,
    })
  );
  try {
    if (isEvent(input, "SessionEnd")) {
      await recordSessionEnd(root, input.session_id, { reason: input.reason, now: ctx.now() });
    }
    await sightSession(request, { waitMs: await lockWaitMs() });
  } catch (error) {
    if (!(error instanceof LockTimeoutError)) throw error;
    // The heartbeat file is written; another heartbeat holds session.json and is recording the
    // same facts. Background hooks never wait (DESIGN §5), so this one skips it.
    await logHookProblem(ctx.env, {
      command: "hook heartbeat",
      message: "session.json is busy (another heartbeat is writing it); skipped",
      session: input.session_id,
      root,
    });
  } finally {
    await registering;
  }
  return null;
}

export function run(ctx: Context): Promise<number> {
  return runHook(ctx, "heartbeat", handle, { background: true });
}
