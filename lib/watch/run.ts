/**
 * `watch tmux` as a long-running job: the watcher of each tmux server (a {@linkcode Fleet}) over
 * the real tmux, clock, files and notifications, scanning until stopped; and `--explain`, which
 * reads one pane the same way. The command parses, calls these and renders what they say.
 *
 * @module
 */

import { editsVimStyle } from "../claude/settings.ts";
import { CliError } from "../core/cli.ts";
import { repeat } from "../core/loop.ts";
import { sleep } from "../core/sleep.ts";
import { notify } from "../host/notify.ts";
import { processKey } from "../host/proc.ts";
import type { TmuxServer } from "../host/tmux.ts";
import type { Config } from "../state/config.ts";
import { eventLogPath } from "../state/event_log.ts";
import { logToOwnLog } from "../state/own_log.ts";
import { logRecovery } from "../state/recovery_log.ts";
import { registeredRoots } from "../state/roots.ts";
import { appendJsonLine, pathExists, readState } from "../state/store.ts";
import {
  type PaneEvent,
  ServerDownError,
  tmuxClient,
  type WatchDeps,
  type WatchSettings,
} from "./engine.ts";
import { explainPane, type Explanation } from "./explain.ts";
import { Fleet, unregisteredLog } from "./fleet.ts";
import { registeredPanes } from "./records.ts";
import { watchFiles, watchStateCodec } from "./state.ts";

/** Where what the watcher says goes (the command renders it and keeps it in the watch log). */
export interface WatchOutput {
  pane(event: PaneEvent): void;
  say(event: string, message: string, extra?: Record<string, unknown>): void;
  flush(): Promise<void>;
}

/** What a watch needs from the process and the command line. */
export interface WatchJob {
  env: Readonly<Record<string, string>>;
  pid: number;
  now(): number;
  random(): number;
  signal: AbortSignal;
  /** lifeline's own state directory. */
  ownRoot: string;
  /** The project given with --root (its registered sessions are joined even if unregistered). */
  root: string;
  config: Config;
  settings: WatchSettings;
  /** The server named on the command line (or the default one), and the path it is reached by. */
  server: TmuxServer;
  socket: string;
  /** `/tmp/tmux-<uid>`, whatever `$TMUX_TMPDIR` says: where each tmux server process's lock is. */
  tmuxDir: string;
  /** The server was named: only it is watched, not the servers registered sessions name. */
  named: boolean;
  out: WatchOutput;
}

/** The watcher's settings, from the config. */
export function watchSettings(
  config: Config,
  { dryRun, target, localZone }: { dryRun: boolean; target?: string; localZone: string },
): WatchSettings {
  const w = config.watch;
  return {
    agentCommands: w.agentCommands,
    resumeText: w.resumeText,
    keyDelayMs: w.keyDelayMs,
    verifyDelayMs: w.verifyDelaySeconds * 1000,
    staggerMs: w.staggerSeconds * 1000,
    dryRun,
    ...(target !== undefined ? { target } : {}),
    policy: {
      resumeMarginSeconds: w.resumeMarginSeconds,
      nativeMarginSeconds: w.nativeMarginSeconds,
      transientBackoffSeconds: w.transientBackoffSeconds,
      maxAttempts: w.maxAttempts,
      foregroundRetries: config.retry.foregroundMax,
      localZone,
    },
  };
}

async function roots(job: WatchJob): Promise<string[]> {
  return [...new Set([job.root, ...await registeredRoots(job.env)])];
}

/** Everything the watcher of one server touches, for real. */
function watcherDeps(job: WatchJob): (server: TmuxServer) => WatchDeps {
  const ownLog = unregisteredLog(job.ownRoot);
  return (server) => ({
    tmux: tmuxClient(server),
    now: job.now,
    sleep: (ms: number) => sleep(ms),
    stopping: () => job.signal.aborted,
    random: job.random,
    emit: job.out.pane,
    sessions: async () => registeredPanes(await roots(job)),
    // A dry run writes nothing and tells nobody: it only says, on stdout, what it would do.
    log: (entry, at) =>
      job.settings.dryRun
        ? Promise.resolve()
        : at === null
        ? appendJsonLine(ownLog, entry, { root: job.ownRoot })
        : logRecovery(at, entry),
    processKey,
    vimMode: () => editsVimStyle(job.env),
    notify: async (notice) => {
      if (job.settings.dryRun) return;
      const failures = await notify({
        event: notice.event,
        message: notice.message,
        pane: { id: notice.pane, server },
        ...(notice.session ? { session: notice.session } : {}),
      }, job.config.notify);
      for (const failure of failures) {
        await logToOwnLog(job.env, {
          command: "watch tmux",
          message: `could not notify: ${failure}`,
        });
      }
    },
  });
}

/** The sockets of the tmux servers registered sessions name (that still exist). */
async function registeredSockets(job: WatchJob): Promise<string[]> {
  const sockets = new Set<string>();
  for (const { record } of await registeredPanes(await roots(job))) {
    if (record.tmux_socket) sockets.add(record.tmux_socket);
  }
  const alive = [];
  for (const socket of sockets) if (await pathExists(socket)) alive.push(socket);
  return alive.sort();
}

/** `--explain`: one pane, read and decided as a scan would, with what the watcher knows of it. */
export async function explainTmuxPane(
  job: WatchJob,
  serverPid: number | null,
  paneId: string,
): Promise<Explanation> {
  const files = await watchFiles(job.env, job.socket);
  const saved = await readState(files.state, watchStateCodec, { root: job.ownRoot });
  const known = saved.kind === "ok" && saved.value.server.pid === serverPid
    ? saved.value.panes
    : {};
  return await explainPane(watcherDeps(job)(job.server), job.settings, known, paneId);
}

/**
 * Watches until `job.signal` aborts (or scans once): the named server, waited for while it is
 * down, and (unless a server was named) every server a registered session names.
 */
export async function watchTmux(
  job: WatchJob,
  { once, intervalMs }: { once: boolean; intervalMs: number },
): Promise<void> {
  const fleet = new Fleet({
    env: job.env,
    pid: job.pid,
    now: job.now,
    ownRoot: job.ownRoot,
    tmuxDir: job.tmuxDir,
    watcherDeps: watcherDeps(job),
    say: job.out.say,
  }, job.settings);
  try {
    const first = await fleet.add(job.server, job.socket);
    if ("heldBy" in first) {
      throw new CliError(
        `already running on this tmux server (pid ${first.heldBy ?? "unknown"})`,
        `one watcher per tmux server; its lock is ${first.lock}`,
      );
    }
    const stateFile = job.settings.dryRun ? null : first.files.state;
    const files = job.settings.dryRun
      ? "dry run: nothing typed, no state, no log, no notification"
      : `state ${stateFile}; log ${eventLogPath(job.env, "watch")}; recovery log: each ` +
        `session's project, or ${unregisteredLog(job.ownRoot)}`;
    job.out.say(
      "start",
      `watching tmux server ${job.socket}${
        first.pid ? ` (pid ${first.pid})` : " (not running yet)"
      } every ${intervalMs / 1000} s; ${files}${
        job.named ? "" : "; also every tmux server a registered session names"
      }`,
      {
        socket: job.socket,
        server_pid: first.pid,
        interval_s: intervalMs / 1000,
        state_file: stateFile,
      },
    );
    await repeat({
      signal: job.signal,
      once,
      waitMs: () => fleet.nextWaitMs(intervalMs),
      tick: async () => {
        if (!job.named) {
          for (const found of await registeredSockets(job)) {
            await fleet.discovered({ socketPath: found }, found);
          }
        }
        await fleet.scan({ once }).catch((error) => {
          if (error instanceof ServerDownError) {
            throw new CliError(
              `no tmux server runs on ${job.socket} (or its socket was moved or renamed)`,
            );
          }
          throw error;
        });
        await job.out.flush();
        const target = job.settings.target;
        const panes = [...fleet.served.values()].reduce((n, s) => n + s.watcher.records.size, 0);
        if (once && target && panes === 0) {
          throw new CliError(
            `no agent pane matches --target ${target} on ${job.socket}`,
            "list the panes with: tmux list-panes -a",
          );
        }
      },
    });
  } finally {
    await fleet.close();
  }
}
