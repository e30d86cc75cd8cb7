/**
 * {@linkcode assessSession}: the engine around the one liveness judgement (`stale_policy.ts`) that
 * `status`, `daemon stale` and `hook crash` share. It reads the facts the judgement asks for, and
 * only those: a finished session costs one `lstat` (its `finished` mark), a live one a few file
 * reads, and only a session whose heartbeat is stale gets its tmux pane and agent process looked
 * at.
 *
 * @module
 */

import { recordedProcessState, sameHost } from "../host/proc.ts";
import { tmux, TmuxError } from "../host/tmux.ts";
import { joinPath } from "../core/path.ts";
import { validateName } from "../state/layout.ts";
import { isFileSync, numberCodec, readSmallFileSync } from "../state/store.ts";
import { readFinishedSync, readSessionRecord, type SessionRecord } from "./registry.ts";
import {
  decideSession,
  type HostEvidence,
  type SessionAction,
  type SessionJudgement,
  type SessionLifecycle,
  type SessionObservation,
  type SessionOptions,
} from "./stale_policy.ts";

/**
 * Live panes per tmux socket, each with the program it runs (`pane_current_command`), looked up
 * once per round; "unknown" when tmux did not answer.
 */
export type PaneIndex = Map<string, Map<string, string> | "unknown">;

/**
 * The panes of the server at `socket`. Only a server that answers can say a pane is gone: a socket
 * that was removed (tmpfiles cleaning `/tmp`), "no server running", "error connecting" and a
 * server that does not answer in time (stopped, wedged) say nothing about the panes, which may
 * well still run.
 */
async function serverPanes(socket: string): Promise<Map<string, string> | "unknown"> {
  try {
    const out = await tmux({ socketPath: socket }, [
      "list-panes",
      "-a",
      "-F",
      "#{pane_id}\t#{pane_current_command}",
    ]);
    const panes = new Map<string, string>();
    for (const line of out.split("\n")) {
      const [id, command = ""] = line.trim().split("\t");
      if (id?.startsWith("%")) panes.set(id, command);
    }
    return panes;
  } catch (error) {
    if (error instanceof TmuxError) return "unknown";
    throw error;
  }
}

/**
 * Whether the recorded pane is there, and whether it runs the agent: one of `agentCommands`, or
 * the program recorded as the agent (`node`, for a client installed with npm).
 */
async function paneEvidence(
  record: SessionRecord | undefined,
  index: PaneIndex,
  agentCommands: readonly string[],
): Promise<HostEvidence["pane"]> {
  if (!record?.tmux_pane || !record.tmux_socket) return "unknown";
  let panes = index.get(record.tmux_socket);
  if (panes === undefined) {
    panes = await serverPanes(record.tmux_socket);
    index.set(record.tmux_socket, panes);
  }
  if (panes === "unknown") return "unknown";
  const command = panes.get(record.tmux_pane);
  if (command === undefined) return "gone";
  const agent = command !== "" &&
    (agentCommands.includes(command) || command === record.agent_command);
  return agent ? "running" : "present";
}

/**
 * What can be found out about a session's host: its tmux pane and its agent process. An agent
 * recorded on another host, or in another pid namespace (a container), cannot be checked from
 * here, nor can the tmux server it named: nothing is known.
 */
export async function hostEvidence(
  record: SessionRecord | undefined,
  index: PaneIndex,
  { agentCommands = ["claude"], hostname = "" }: {
    agentCommands?: readonly string[] | undefined;
    hostname?: string | undefined;
  } = {},
): Promise<HostEvidence> {
  const recorded = { hostname: record?.agent_host, pidNamespace: record?.agent_pid_ns };
  if (record && !sameHost(recorded, hostname)) {
    return { pane: "unknown", process: "elsewhere" };
  }
  const [pane, process] = await Promise.all([
    paneEvidence(record, index, agentCommands),
    typeof record?.agent_pid === "number"
      ? recordedProcessState({
        pid: record.agent_pid,
        started: record.agent_started,
        startId: record.agent_start_id,
      })
      : "unknown" as const,
  ]);
  return { pane, process };
}

/** Settings of an assessment. */
export interface AssessOptions extends SessionOptions {
  /** Shared by the sessions of one round, so each tmux server is asked once. */
  panes: PaneIndex;
  /** Programs that are the agent (`watch.agentCommands`), for what a pane runs. */
  agentCommands?: readonly string[];
  /** This host's name, to tell an agent recorded on another (see `sameHost`). */
  hostname?: string;
  /** Read `session.json` of every session that is not finished, to show it (status does). */
  withRecord?: boolean;
}

/** One session's judgement, and what should be done about it. */
export interface SessionAssessment extends SessionJudgement {
  id: string;
  /** Its `session.json`, when it was needed and could be read. */
  record: SessionRecord | undefined;
  actions: Exclude<SessionAction, { kind: "learn" }>[];
}

function mtimeSync(path: string): number | null {
  try {
    return Deno.lstatSync(path).mtime?.getTime() ?? null;
  } catch {
    return null;
  }
}

function heartbeatSync(path: string): number | null {
  const text = readSmallFileSync(path, 64);
  if (text === undefined) return null;
  try {
    return numberCodec.parse(text);
  } catch {
    return null;
  }
}

/** A judgement under way: the facts learnt so far. */
interface Assessing {
  root: string;
  id: string;
  dir: string;
  lifecycle: SessionLifecycle;
  seen: SessionObservation;
  record?: SessionRecord | undefined;
}

/**
 * Decides with the facts at hand, learning those that files tell (synchronously) until the
 * judgement is made or needs the host, which only a process lookup and tmux can tell.
 */
function advance(
  at: Assessing,
  options: AssessOptions,
): { done: SessionAssessment } | { needsHost: true } {
  const { dir, lifecycle, seen } = at;
  // Each round learns at least one fact, and there are four.
  for (let round = 0;; round++) {
    const { state, actions } = decideSession(lifecycle, seen, options);
    const learn = actions.find((a) => a.kind === "learn");
    if (!learn || round > 4) {
      const rest = actions.filter((a): a is SessionAssessment["actions"][number] =>
        a.kind !== "learn"
      );
      return { done: { ...state, id: at.id, record: at.record, actions: rest } };
    }
    for (const fact of learn.facts) {
      if (fact === "delivered") {
        lifecycle.delivered = isFileSync(`${dir}/handoffs/scavenged.md.offered`);
      }
      if (fact === "statusChanged") lifecycle.statusChangedMs = mtimeSync(`${dir}/status`);
      if (fact === "heartbeat" && seen.heartbeat === undefined) {
        seen.heartbeat = heartbeatSync(`${dir}/heartbeat`);
        seen.registered = isFileSync(`${dir}/session.json`);
      }
      if (fact === "host") return { needsHost: true };
    }
  }
}

function begin(root: string, id: string): Assessing {
  // Plain paths, not sessionPaths(): this runs for every session of a project, thousands of times.
  const dir = joinPath(root, "sessions", validateName("session id", id));
  const mark = readFinishedSync(dir);
  const lifecycle: SessionLifecycle = mark
    ? { status: mark.word, delivered: mark.word === "scavenged", statusChangedMs: mark.atMs }
    : { status: readSmallFileSync(`${dir}/status`)?.trim() ?? "" };
  return { root, id, dir, lifecycle, seen: {} };
}

/**
 * {@linkcode assessSession} for a session whose files alone decide (finished, fresh, or without a
 * registry), synchronously; undefined when its host must be looked at, or its registry read
 * (`withRecord`). Loops over thousands of sessions call it first: no promise per session.
 */
export function assessSessionSync(
  root: string,
  id: string,
  options: AssessOptions,
): SessionAssessment | undefined {
  const step = advance(begin(root, id), options);
  if (!("done" in step)) return undefined;
  if (options.withRecord && !step.done.finished) return undefined;
  return step.done;
}

/**
 * Judges one session of `root`, reading what the judgement needs: a finished session's mark
 * alone, else its status, then its heartbeat, and last its registry and host.
 */
export async function assessSession(
  root: string,
  id: string,
  options: AssessOptions,
): Promise<SessionAssessment> {
  const at = begin(root, id);
  for (;;) {
    const step = advance(at, options);
    if ("done" in step) {
      if (options.withRecord && !step.done.finished && at.record === undefined) {
        at.record = await readSessionRecord(root, id);
        return { ...step.done, record: at.record };
      }
      return step.done;
    }
    at.record ??= await readSessionRecord(root, id);
    at.seen.host = await hostEvidence(at.record, options.panes, options);
  }
}
