/**
 * The stale-session daemon's engine (`lifeline daemon stale`): each tick, every session of every
 * root is judged (`assessSession`); a dead one has its findings rescued from its transcript into
 * `sessions/<id>/handoffs/scavenged.md` (spec/error-recovery.md §5.3), the user is told, and, with
 * revive on, it is resumed in a new tmux window; a finished one idle long enough is pruned. Each
 * root is judged by its own `.lifeline/config.json`. One session's trouble is logged, and the
 * others go on.
 *
 * @module
 */

import { notify } from "../host/notify.ts";
import { type Config, loadConfig } from "../state/config.ts";
import { sessionPaths } from "../state/layout.ts";
import { logToOwnLog } from "../state/own_log.ts";
import { logRecovery, type RecoveryRecord } from "../state/recovery_log.ts";
import { registeredRoots } from "../state/roots.ts";
import { recordScavenge } from "../state/scavenges.ts";
import { describeError, removeFile, withLock, writeFileAtomic } from "../state/store.ts";
import { assessSession, type PaneIndex, type SessionAssessment } from "./liveness.ts";
import { pruneSession, removeLeftover } from "./prune.ts";
import { clearFinished } from "./registry.ts";
import { reviveSession } from "./revive.ts";
import {
  MAX_TRANSCRIPT_BYTES,
  renderHandoff,
  scavengeFile,
  type TranscriptSummary,
} from "./scavenger.ts";
import { listSessions } from "./session_list.ts";

/** One session's judgement in one tick, and what was done about it. */
export interface SessionReport {
  ts: string;
  root: string;
  session: string;
  state: string;
  heartbeat_age: number | null;
  action: "none" | "prune" | "scavenge" | "revive";
  reason: string;
  /** The handoff a scavenge wrote, relative to the root. */
  handoff?: string;
  /** The tmux window a revive opened. */
  window?: string;
}

/** What the daemon needs from where it runs. */
export interface DaemonDeps {
  env: Readonly<Record<string, string>>;
  now(): number;
  /** This host's name (an agent recorded on another cannot be checked from here). */
  hostname(): string;
  signal: AbortSignal;
  /**
   * Hears every session's judgement, each tick; `notable` when something was done or went wrong
   * (what a log keeps), not for the judgement of a session left as it is.
   */
  report(line: SessionReport, notable: boolean): void;
  /** Hears what happens to the daemon itself: a root dropped, a root whose config is broken. */
  say(event: string, message: string, extra?: Record<string, unknown>): void;
}

/** Settings given on the command line, over every root's own. */
export interface DaemonOptions {
  staleAfterSeconds?: number | undefined;
  /** Revive in every root, whatever its `stale.revive`. */
  revive?: boolean | undefined;
}

/** One root in one tick. */
interface RootTick {
  root: string;
  config: Config;
  staleAfter: number;
  panes: PaneIndex;
  /** Sessions judged alive, and those scavenged, in this tick (for reviving). */
  alive: string[];
  scavenged: SessionAssessment[];
  /** Transcript bytes this tick may still read, for all its roots (see TICK_TRANSCRIPT_BYTES). */
  budget: { left: number };
}

/**
 * Transcript bytes one tick reads at most, over every handoff it writes, so that a tick ends
 * (a transcript is read at most its last MAX_TRANSCRIPT_BYTES). Once it is spent, a handoff still
 * gets the last MIN_TRANSCRIPT_BYTES of its transcript: every dead session gets one.
 */
const TICK_TRANSCRIPT_BYTES = 1 << 30;
const MIN_TRANSCRIPT_BYTES = 16 << 20;

/**
 * The roots to look after: `explicit` ones (`--root`) when given; else every registered root
 * (dropping, and saying so, those that no longer exist) and `here`, when it holds sessions.
 */
export async function daemonRoots(
  env: Readonly<Record<string, string>>,
  { explicit, here, dropped }: {
    explicit: readonly string[];
    here: string | null;
    dropped: (root: string) => void;
  },
): Promise<string[]> {
  if (explicit.length > 0) return [...explicit];
  const roots = await registeredRoots(env, { dropped });
  return [...new Set([...(here ? [here] : []), ...roots])];
}

/** The daemon: call {@linkcode StaleDaemon.tick} once per interval. */
export class StaleDaemon {
  /** Things said once: entries of sessions/ that are not sessions, broken configs. */
  #said = new Set<string>();
  #deps: DaemonDeps;
  #options: DaemonOptions;

  constructor(deps: DaemonDeps, options: DaemonOptions = {}) {
    this.#deps = deps;
    this.#options = options;
  }

  /** Checks every session of every root once. */
  async tick(roots: readonly string[]): Promise<void> {
    const panes: PaneIndex = new Map();
    const budget = { left: TICK_TRANSCRIPT_BYTES };
    for (const root of roots) {
      if (this.#deps.signal.aborted) return;
      let config: Config;
      try {
        config = await loadConfig(this.#deps.env, root);
      } catch (error) {
        this.#once(
          `config\0${root}\0${describeError(error)}`,
          () =>
            this.#deps.say("root_skipped", `${root}: skipped: ${describeError(error)}`, { root }),
        );
        continue;
      }
      const staleAfter = this.#options.staleAfterSeconds ?? config.stale.afterSeconds;
      await this.#tickRoot({
        root,
        config,
        staleAfter,
        panes,
        alive: [],
        scavenged: [],
        budget,
      });
    }
  }

  #once(key: string, say: () => void | Promise<void>): void | Promise<void> {
    if (this.#said.has(key)) return;
    this.#said.add(key);
    return say();
  }

  async #tickRoot(t: RootTick): Promise<void> {
    const { env } = this.#deps;
    const listing = listSessions(t.root);
    for (const { name, reason } of listing.skipped) {
      await this.#once(`${t.root}\0${name}`, () =>
        logToOwnLog(env, {
          command: "daemon stale",
          message: `sessions/${name} is not a session (${reason}); skipped`,
          root: t.root,
        }));
    }
    for (const name of listing.pruning) await removeLeftover(t.root, name).catch(() => {});
    for (const id of listing.ids) {
      if (this.#deps.signal.aborted) return;
      // One session's trouble (an unreadable file, a full disk) is logged; the others go on.
      try {
        await this.#tickSession(t, id);
      } catch (error) {
        if (this.#deps.signal.aborted) return; // stopping, not trouble
        await this.#trouble(t.root, id, "could not be checked", error);
      }
    }
    for (const judged of t.scavenged) {
      try {
        await this.#revive(t, judged);
      } catch (error) {
        await this.#trouble(t.root, judged.id, "could not be revived", error);
      }
    }
  }

  async #trouble(root: string, id: string, what: string, error: unknown): Promise<void> {
    await logToOwnLog(this.#deps.env, {
      command: "daemon stale",
      message: `sessions/${id} ${what}; skipped`,
      error,
      root,
      session: id,
    });
    this.#report({
      root,
      session: id,
      state: "unknown",
      heartbeat_age: null,
      action: "none",
      reason: `${what}: ${describeError(error)}`,
    }, true);
  }

  #report(line: Omit<SessionReport, "ts">, notable = line.action !== "none"): void {
    this.#deps.report({ ts: new Date(this.#deps.now()).toISOString(), ...line }, notable);
  }

  async #log(
    root: string,
    entry: Pick<RecoveryRecord, "session" | "action" | "target" | "result">,
  ): Promise<void> {
    const ts = new Date(this.#deps.now()).toISOString();
    await logRecovery(root, { ts, kind: "stale_session", ...entry });
  }

  async #tickSession(t: RootTick, id: string): Promise<void> {
    const now = this.#deps.now();
    const settings = {
      now,
      staleAfterSeconds: t.staleAfter,
      pruneAfterSeconds: t.config.stale.pruneAfterDays * 86_400,
    };
    const judged = await assessSession(t.root, id, {
      ...settings,
      panes: t.panes,
      agentCommands: t.config.watch.agentCommands,
      hostname: this.#deps.hostname(),
    });
    if (judged.state === "unregistered") return; // no registry, no heartbeat: not a live session
    if (judged.state === "alive") t.alive.push(id);
    const base = { root: t.root, session: id, heartbeat_age: judged.heartbeatAge };
    // The judgement asks for one thing at most: to prune a finished session, or to scavenge.
    const action = judged.actions[0];
    const waitMs = t.config.hooks.lockWaitMs;
    if (action?.kind === "prune" && await pruneSession(t.root, id, { ...settings, waitMs })) {
      await this.#log(t.root, {
        session: id,
        action: "pruned",
        target: `sessions/${id}`,
        result: action.reason,
      });
      this.#report({ ...base, state: judged.state, action: "prune", reason: action.reason });
      return;
    }
    if (action?.kind === "scavenge") return await this.#scavenged(t, judged, action.reason);
    this.#report({ ...base, state: judged.state, action: "none", reason: judged.reason });
  }

  async #scavenged(t: RootTick, judged: SessionAssessment, cause: string): Promise<void> {
    const { id } = judged;
    const base = { root: t.root, session: id, heartbeat_age: judged.heartbeatAge };
    const handoff = await this.#scavenge(t, judged, cause);
    if (handoff === null) {
      t.alive.push(id);
      this.#report({ ...base, state: "alive", action: "none", reason: "it showed life meanwhile" });
      return;
    }
    t.scavenged.push(judged);
    await this.#log(t.root, { session: id, action: "scavenged", target: handoff, result: cause });
    const reason = `${cause}; wrote ${handoff}`;
    this.#report({ ...base, state: "dead", action: "scavenge", reason, handoff });
    await this.#notify(t, judged, {
      event: "scavenged",
      message: `session ${id} in ${t.root} died (${cause}); its findings are in ${handoff}`,
    });
  }

  /** Tells the user, on the session's tmux client when it has one, and logs what failed. */
  async #notify(
    t: RootTick,
    judged: SessionAssessment,
    notice: { event: string; message: string; pane?: string },
  ): Promise<void> {
    const socket = judged.record?.tmux_socket;
    const known = socket ? t.panes.get(socket) : undefined;
    const pane = notice.pane ??
      (known !== "unknown" && known?.has(judged.record!.tmux_pane!)
        ? judged.record!.tmux_pane!
        : judged.record?.tmux_session);
    const failures = await notify({
      event: notice.event,
      message: notice.message,
      session: judged.id,
      ...(socket && pane ? { pane: { id: pane, server: { socketPath: socket } } } : {}),
    }, t.config.notify);
    for (const failure of failures) {
      await logToOwnLog(this.#deps.env, {
        command: "daemon stale",
        message: `could not notify: ${failure}`,
        root: t.root,
        session: judged.id,
      });
    }
  }

  async #revive(t: RootTick, judged: SessionAssessment): Promise<void> {
    const command = t.config.stale.reviveCommand;
    const outcome = await reviveSession(t.root, judged, {
      env: this.#deps.env,
      now: this.#deps.now(),
      enabled: this.#options.revive === true || t.config.stale.revive,
      command,
      alive: t.alive,
      panes: t.panes,
    });
    if (!outcome) return;
    const base = { root: t.root, session: judged.id, heartbeat_age: judged.heartbeatAge };
    if (outcome.kind === "skipped") {
      const reason = `not revived: ${outcome.reason}`;
      this.#report({ ...base, state: "scavenged", action: "none", reason }, true);
      return;
    }
    const shown = outcome.command.join(" ");
    const reason = `opened tmux window ${outcome.window} running \`${shown}\``;
    await this.#log(t.root, {
      session: judged.id,
      action: "revived_in_tmux",
      target: `tmux window ${outcome.window} (pane ${outcome.pane})`,
      result: shown,
    });
    this.#report({ ...base, state: "scavenged", action: "revive", reason, window: outcome.window });
    await this.#notify(t, judged, {
      event: "revived",
      message: `session ${judged.id} in ${t.root} was resumed in tmux window ${outcome.window}`,
      pane: outcome.pane,
    });
  }

  /**
   * Writes the handoff and the status; returns the handoff's path relative to the root, or null
   * when the session is no longer dead once its transcript is read. The transcript is read first,
   * without a lock; the files are written under the registry's lock, the one the heartbeat hook
   * takes to mark a session alive again, after checking that nothing changed meanwhile.
   */
  async #scavenge(t: RootTick, judged: SessionAssessment, cause: string): Promise<string | null> {
    const { root } = t;
    const { id } = judged;
    const paths = sessionPaths(root, id);
    const markdown = await handoffText(judged, cause, {
      now: this.#deps.now(),
      budget: t.budget,
      signal: this.#deps.signal,
    });
    return await withLock(paths.session, async () => {
      const again = await assessSession(root, id, {
        now: this.#deps.now(),
        staleAfterSeconds: t.staleAfter,
        panes: new Map(),
        agentCommands: t.config.watch.agentCommands,
        hostname: this.#deps.hostname(),
      });
      if (again.state !== "dead") return null; // it came back, or was rescued by another
      await clearFinished(root, id); // first: see markFinished
      // The ledger first: a handoff on disk that it does not hold is never offered (hook crash).
      await recordScavenge(this.#deps.env, {
        root,
        session: id,
        handoff: markdown,
        now: this.#deps.now(),
      });
      await writeFileAtomic(paths.scavenged, markdown, { root });
      // A new handoff is unread again, even if an earlier one was offered.
      await removeFile(`${paths.scavenged}.offered`, { root }).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
      await writeFileAtomic(paths.status, "scavenged\n", { root });
      return `sessions/${id}/handoffs/scavenged.md`;
    }, { root, waitMs: t.config.hooks.lockWaitMs });
  }
}

/** The handoff of a dead session, from its transcript (or saying why there is none). */
async function handoffText(
  judged: SessionAssessment,
  cause: string,
  { now, budget, signal }: { now: number; budget: { left: number }; signal: AbortSignal },
) {
  const { id, record } = judged;
  let summary: TranscriptSummary | null = null;
  let problem: string | undefined;
  const transcript = record?.transcript_path ?? null;
  if (!transcript) {
    problem = "session.json records no transcript path";
  } else {
    try {
      const maxBytes = Math.max(MIN_TRANSCRIPT_BYTES, Math.min(MAX_TRANSCRIPT_BYTES, budget.left));
      summary = await scavengeFile(transcript, { maxBytes, signal });
      budget.left -= summary.read ?? 0;
    } catch (error) {
      if (signal.aborted) throw error; // stopping: no handoff from half a read
      problem = `${transcript}: ${describeError(error)}`;
    }
  }
  return renderHandoff({
    sessionId: id,
    cwd: record?.cwd ?? null,
    transcriptPath: transcript,
    cause,
    rescuedAt: new Date(now).toISOString(),
    ...(problem ? { transcriptProblem: problem } : {}),
  }, summary);
}
