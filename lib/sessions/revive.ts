/**
 * Reviving a scavenged session (`daemon stale --revive`): the facts {@linkcode decideRevive} asks
 * for, and the one thing it may decide, a new window in the session's tmux session, in its cwd,
 * running the agent's resume command (`stale.reviveCommand`, `claude --resume <id>`). The claim
 * (`sessions/<id>/revived.json`, created exclusively) comes first, so a session is revived once
 * however many daemons look at it.
 *
 * @module
 */

import {
  allSettingsPaths,
  commandHooks,
  lifelineHookOf,
  readSettings,
} from "../claude/settings.ts";
import { serverIdentity, tmux, TmuxError, type TmuxServer } from "../host/tmux.ts";
import { sessionPaths } from "../state/layout.ts";
import { describeError, writeFileAtomic, writeNewFile } from "../state/store.ts";
import type { PaneIndex, SessionAssessment } from "./liveness.ts";
import {
  readHeartbeat,
  readSessionEnd,
  readSessionRecord,
  type SessionRecord,
} from "./registry.ts";
import { decideRevive } from "./revive_policy.ts";

/** What a revive did. */
export type ReviveOutcome =
  | { kind: "revived"; window: string; pane: string; command: string[] }
  | { kind: "skipped"; reason: string };

/** What a revive needs beyond the session. */
export interface ReviveContext {
  env: Readonly<Record<string, string>>;
  now: number;
  enabled: boolean;
  /** The agent command; the session id is added as its last argument. */
  command: readonly string[];
  /** The project's sessions judged alive in this tick. */
  alive: readonly string[];
  panes: PaneIndex;
}

/** True when a SessionEnd hook of the project (any settings scope) runs `hook heartbeat`. */
export async function recordsSessionEnd(
  env: Readonly<Record<string, string>>,
  root: string,
): Promise<boolean> {
  for (const { path } of allSettingsPaths(env, root)) {
    const read = await readSettings(path).catch(() => null);
    if (read?.kind !== "ok") continue;
    const hooks = commandHooks(read.value);
    if (hooks.some((h) => h.event === "SessionEnd" && lifelineHookOf(h.command) === "heartbeat")) {
      return true;
    }
  }
  return false;
}

/** A live session of the project that started after `sinceSeconds` (epoch seconds). */
async function newerLiveSession(
  root: string,
  alive: readonly string[],
  sinceSeconds: number | null,
): Promise<string | null> {
  for (const id of alive) {
    const first = Date.parse((await readSessionRecord(root, id))?.first_seen ?? "");
    if (sinceSeconds === null || first > sinceSeconds * 1000) return id;
  }
  return null;
}

/** The tmux session to open the window in: the pane's own, on the server it ran on. */
async function tmuxSession(
  record: SessionRecord,
  panes: PaneIndex,
): Promise<{ server: TmuxServer; session: string } | { problem: string }> {
  const server = { socketPath: record.tmux_socket! };
  const identity = await serverIdentity(server);
  if (!identity) return { problem: `its tmux server (${record.tmux_socket}) is gone` };
  // Recorded by an earlier version (no pid): the pane alone, if it is still there, says where.
  if ((record.tmux_server_pid ?? identity.pid) !== identity.pid) {
    return { problem: "its tmux server was restarted since" };
  }
  const known = panes.get(record.tmux_socket!);
  const target = known !== "unknown" && known?.has(record.tmux_pane!)
    ? record.tmux_pane!
    : record.tmux_session;
  if (!target) return { problem: "its pane is gone, and its tmux session was not recorded" };
  try {
    const session = (await tmux(server, ["display-message", "-p", "-t", target, "#{session_id}"]))
      .trim();
    return { server, session };
  } catch (error) {
    if (error instanceof TmuxError) return { problem: "its tmux session is gone" };
    throw error;
  }
}

/**
 * The PATH the tmux session gives its programs (its own, else the server's global one): the one
 * the agent was started with. tmux would give a new window the PATH of whoever asks for it, the
 * daemon's, which under a service manager is a bare one without `~/.local/bin`.
 */
async function sessionPath(server: TmuxServer, session: string): Promise<string | null> {
  for (const scope of [["-t", session], ["-g"]]) {
    try {
      const line = (await tmux(server, ["show-environment", ...scope, "PATH"])).trim();
      if (line.startsWith("PATH=")) return line.slice("PATH=".length);
    } catch (error) {
      if (!(error instanceof TmuxError)) throw error; // "unknown variable": try the next
    }
  }
  return null;
}

/** Claims the revive, opens the window, and records where. */
async function openWindow(
  root: string,
  id: string,
  record: SessionRecord,
  context: ReviveContext,
): Promise<ReviveOutcome> {
  const cwd = record.cwd ?? root;
  if (!(await Deno.stat(cwd).then((info) => info.isDirectory, () => false))) {
    return { kind: "skipped", reason: `its working directory ${cwd} is gone` };
  }
  const where = await tmuxSession(record, context.panes);
  if ("problem" in where) return { kind: "skipped", reason: where.problem };
  const paths = sessionPaths(root, id);
  const command = [...context.command, id];
  const claim = { at: new Date(context.now).toISOString(), command, cwd, window: null };
  try {
    await writeNewFile(paths.revived, JSON.stringify(claim) + "\n", { root });
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) {
      return { kind: "skipped", reason: "it was revived once already" };
    }
    throw error;
  }
  const path = await sessionPath(where.server, where.session);
  let opened: string;
  try {
    opened = await tmux(where.server, [
      ...["new-window", "-d", "-P", "-F", "#{window_id} #{pane_id}"],
      ...["-t", `${where.session}:`, "-c", cwd, "--"],
      ...(path === null ? command : ["env", `PATH=${path}`, ...command]),
    ]);
  } catch (error) {
    // Claimed and failed: not tried again (at most once), and said why.
    return { kind: "skipped", reason: `tmux could not open a window: ${describeError(error)}` };
  }
  const [window = "", pane = ""] = opened.trim().split(" ");
  await writeFileAtomic(paths.revived, JSON.stringify({ ...claim, window, pane }) + "\n", { root });
  return { kind: "revived", window, pane, command };
}

/**
 * Revives a session that was just scavenged, when {@linkcode decideRevive} says so. Null when
 * reviving is off for its project.
 */
export async function reviveSession(
  root: string,
  judged: SessionAssessment,
  context: ReviveContext,
): Promise<ReviveOutcome | null> {
  if (!context.enabled) return null; // the decision would be nothing: no facts to gather
  const id = judged.id;
  const record = judged.record ?? await readSessionRecord(root, id);
  const paths = sessionPaths(root, id);
  const revived = await Deno.lstat(paths.revived).then(() => true, () => false);
  const inTmux = Boolean(record?.tmux_pane && record.tmux_socket);
  const heartbeat = (await readHeartbeat(root, id).catch(() => undefined)) ?? null;
  const facts = {
    inTmux,
    heartbeat,
    end: (await readSessionEnd(root, id)) ?? null,
    endsRecorded: inTmux && await recordsSessionEnd(context.env, root),
    newerLive: inTmux ? await newerLiveSession(root, context.alive, heartbeat) : null,
  };
  const { actions } = decideRevive({ revived }, facts, { enabled: context.enabled });
  const action = actions[0];
  if (!action) return null;
  if (action.kind === "skip") return { kind: "skipped", reason: action.reason };
  return await openWindow(root, id, record!, context);
}
