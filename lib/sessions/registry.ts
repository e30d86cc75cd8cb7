/**
 * The session registry that `hook heartbeat` keeps and the watcher and daemon read:
 * `sessions/<id>/heartbeat` (epoch seconds, as `date +%s` writes it) and `sessions/<id>/session.json`.
 *
 * @module
 */

import * as z from "zod";
import { lazy } from "../core/lazy.ts";
import { sessionPaths } from "../state/layout.ts";
import { jsonCodec, numberCodec, readState, updateState, writeFileAtomic } from "../state/store.ts";

/** `session.json`: where a session runs and how to tell whether it still does. */
export const sessionRecordSchema = lazy(() =>
  z.looseObject({
    session_id: z.string(),
    root: z.string(),
    cwd: z.nullable(z.string()),
    transcript_path: z.nullable(z.string()),
    /** `$TMUX_PANE`, e.g. `%3`. */
    tmux_pane: z.nullable(z.string()),
    /** The tmux server's socket path, from `$TMUX`. */
    tmux_socket: z.nullable(z.string()),
    /** The hook's parent pid at the last sighting; the agent is looked up again when it changes. */
    hook_parent_pid: z.optional(z.nullable(z.number())),
    /** The agent process (the hook's parent, past any shell), with its identity. */
    agent_pid: z.nullable(z.number()),
    agent_command: z.optional(z.nullable(z.string())),
    agent_started: z.optional(z.nullable(z.string())),
    first_seen: z.string(),
    last_seen: z.string(),
    last_event: z.string(),
  })
);

/** `session.json`. */
export type SessionRecord = z.infer<ReturnType<typeof sessionRecordSchema>>;

/** Codec for `session.json`. */
export const sessionRecordCodec = jsonCodec((value) => sessionRecordSchema().parse(value));

/** What one hook call saw of its session. */
export interface SessionSighting {
  sessionId: string;
  root: string;
  event: string;
  cwd?: string | undefined;
  transcriptPath?: string | undefined;
  env: Readonly<Record<string, string>>;
  hookParentPid?: number | undefined;
  agent?: { pid: number; command: string; started: string } | undefined;
}

/** The tmux socket path from `$TMUX` ("<socket>,<server pid>,<session>"). */
export function tmuxSocketFromEnv(tmux: string | undefined): string | null {
  if (!tmux) return null;
  const socket = tmux.split(",")[0];
  return socket ? socket : null;
}

/**
 * The next `session.json` after a sighting: first_seen is kept, everything the sighting knows is
 * updated, and what it does not know keeps its previous value.
 */
export function nextSessionRecord(
  current: SessionRecord | undefined,
  seen: SessionSighting,
  now: number,
): SessionRecord {
  const at = new Date(now).toISOString();
  const pane = seen.env.TMUX_PANE || null;
  return {
    ...current,
    session_id: seen.sessionId,
    root: seen.root,
    cwd: seen.cwd ?? current?.cwd ?? null,
    transcript_path: seen.transcriptPath ?? current?.transcript_path ?? null,
    tmux_pane: pane,
    tmux_socket: pane ? tmuxSocketFromEnv(seen.env.TMUX) : null,
    hook_parent_pid: seen.hookParentPid ?? current?.hook_parent_pid ?? null,
    agent_pid: seen.agent?.pid ?? current?.agent_pid ?? null,
    agent_command: (seen.agent ? seen.agent.command || null : current?.agent_command) ?? null,
    agent_started: (seen.agent ? seen.agent.started || null : current?.agent_started) ?? null,
    first_seen: current?.first_seen ?? at,
    last_seen: at,
    last_event: seen.event,
  };
}

/** The agent process behind a sighting. */
export type AgentIdentity = NonNullable<SessionSighting["agent"]>;

/**
 * Writes the heartbeat and updates `session.json`. `findAgent` gets the record as it was and
 * identifies the agent (it may reuse what the record already knows).
 */
export async function recordSighting(
  seen: Omit<SessionSighting, "agent"> & {
    findAgent: (known: SessionRecord | undefined) => Promise<AgentIdentity>;
  },
  { now, waitMs }: { now: number; waitMs: number },
): Promise<SessionRecord | undefined> {
  const paths = sessionPaths(seen.root, seen.sessionId);
  // The two files are independent; writing them at once overlaps their fsyncs. Both must settle
  // before returning, or the process could exit in the middle of the other write.
  const [beat, update] = await Promise.allSettled([
    writeFileAtomic(paths.heartbeat, numberCodec.format(Math.floor(now / 1000)), {
      root: seen.root,
    }),
    updateState(
      paths.session,
      sessionRecordCodec,
      async (current) =>
        nextSessionRecord(current, { ...seen, agent: await seen.findAgent(current) }, now),
      { root: seen.root, waitMs, now },
    ),
  ]);
  if (beat.status === "rejected") throw beat.reason;
  if (update.status === "rejected") throw update.reason;
  const { value } = update.value;
  return value;
}

/** Reads a session's `session.json` (lockless); undefined when missing or unreadable. */
export async function readSessionRecord(
  root: string,
  sessionId: string,
): Promise<SessionRecord | undefined> {
  const result = await readState(sessionPaths(root, sessionId).session, sessionRecordCodec, {
    root,
  });
  return result.kind === "ok" ? result.value : undefined;
}

/** A session's last heartbeat in epoch seconds, or undefined when missing or unreadable. */
export async function readHeartbeat(root: string, sessionId: string): Promise<number | undefined> {
  const result = await readState(sessionPaths(root, sessionId).heartbeat, numberCodec, { root });
  return result.kind === "ok" ? result.value : undefined;
}
