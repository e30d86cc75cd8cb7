/**
 * `lifeline daemon stale`: finds sessions that died silently and rescues their unsaved findings
 * (the engine is `lib/sessions/stale_daemon.ts`). Parses, chooses the roots, holds the one lock,
 * runs a tick per interval, and renders and logs what the engine says.
 *
 * @module
 */

import { CliError, type Context, existingRoot, EXIT } from "../lib/core/cli.ts";
import { integerFlag, parseFlags } from "../lib/core/flags.ts";
import { joinPath } from "../lib/core/path.ts";
import { sleep } from "../lib/core/sleep.ts";
import { shortHash } from "../lib/core/text.ts";
import { loadConfig } from "../lib/state/config.ts";
import { eventLogPath, eventSink } from "../lib/state/event_log.ts";
import { projectPaths } from "../lib/state/layout.ts";
import { ownStateRoot } from "../lib/state/own_log.ts";
import { discoverRoot } from "../lib/state/project_root.ts";
import { acquireInstanceLock } from "../lib/state/store.ts";
import { daemonRoots, type SessionReport, StaleDaemon } from "../lib/sessions/stale_daemon.ts";

export const help =
  `Usage: lifeline daemon stale [--root DIR]... [--interval 60] [--stale-after 300] [--revive]
                            [--once] [--json]

Finds sessions that died silently and rescues what they were doing. Each tick it checks every
sessions/<id>/ of every project: with --root, those named; without, every project a heartbeat
registered (lifeline's state directory, roots/), and the project it is started in when that
holds sessions. A registered project whose directory is gone is dropped from the registry, and
said so. Each project is judged by its own .lifeline/config.json.

A session is dead when its heartbeat is older than --stale-after seconds and it has lost its host:
its agent process (pid and start time, from session.json) is dead or now another program, or,
with no process to go by, its tmux pane is gone. A fresh heartbeat, or a live agent process, is
alive; a tmux server that does not answer (no server, a removed socket) proves nothing.

For a dead session it streams the transcript and writes sessions/<id>/handoffs/scavenged.md:
facts (cwd, branch, model, times), the last prompts and replies, open todos, files edited,
unresolved tool errors, the last API error and compactions, with secrets redacted. Then it sets
sessions/<id>/status to "scavenged", and leaves it so until the session's own heartbeat hook marks
it alive again, and tells you (notify.command, and the tmux client showing the session).
\`lifeline hook crash\` offers the handoff to the next session, once.

With --revive (or stale.revive in a project's config), a scavenged session whose agent ran in
tmux is resumed: a new window in the same tmux session, in the session's cwd, runs
stale.reviveCommand with the session id ("claude --resume <id>"). At most once per session
(sessions/<id>/revived.json); never for a session you ended (SessionEnd: prompt_input_exit,
logout, clear), so SessionEnd must run \`lifeline hook heartbeat\` too; never when a session of the
project started after it died.

Finished sessions (ended, or scavenged with the handoff delivered) idle for longer than
stale.pruneAfterDays (default 7) are deleted. One session that cannot be checked is logged and
skipped; the others go on.

Options:
  --root DIR          a project to watch (repeatable; default: every registered project)
  --interval SECONDS  seconds between ticks (default: stale.intervalSeconds, 60)
  --stale-after SECS  heartbeat age that makes a session a suspect (default: stale.afterSeconds)
  --revive            revive scavenged tmux sessions in every project (default: stale.revive)
  --once              one tick, then exit
  --json              one JSON object per session per tick:
                      {"ts","root","session","state","heartbeat_age","action","reason"};
                      lifecycle lines (start, root_dropped, stopped) carry "event"
  -h, --help

When it starts it says what it watches, how often, and where it logs: logs/daemon.log in lifeline's
state directory, one JSON line per thing it did (\`lifeline logs daemon\`). One daemon per set of
roots (and one for every registered project); a second exits 1 naming the first.`;

/** Parsed arguments. */
export interface DaemonArgs {
  roots: string[];
  intervalSeconds?: number;
  staleAfterSeconds?: number;
  revive: boolean;
  once: boolean;
  json: boolean;
}

/** Parses `daemon stale` arguments. Throws UsageError. */
export function parse(args: readonly string[]): DaemonArgs {
  const { values } = parseFlags(args, {
    root: { type: "string", multiple: true },
    interval: { type: "string" },
    "stale-after": { type: "string" },
    revive: { type: "boolean" },
    once: { type: "boolean" },
    json: { type: "boolean" },
  });
  return {
    roots: (values.root as string[] | undefined) ?? [],
    ...(values.interval !== undefined
      ? { intervalSeconds: integerFlag("interval", values.interval, 60, { min: 1, max: 86_400 }) }
      : {}),
    ...(values["stale-after"] !== undefined
      ? { staleAfterSeconds: integerFlag("stale-after", values["stale-after"], 300, { min: 1 }) }
      : {}),
    revive: values.revive === true,
    once: values.once === true,
    json: values.json === true,
  };
}

/** Renders what the daemon says, and keeps what matters in its log. */
function renderer(ctx: Context, json: boolean, log: ReturnType<typeof eventSink>) {
  return {
    report(line: SessionReport, notable: boolean): void {
      if (notable) log.keep({ ...line });
      if (json) ctx.out.json(line);
      else if (line.action !== "none") {
        ctx.out.line(
          `${line.ts} ${line.root}: session ${line.session} ${line.action} - ${line.reason}`,
        );
      }
    },
    say(event: string, message: string, extra: Record<string, unknown> = {}): void {
      const ts = new Date(ctx.now()).toISOString();
      log.keep({ ts, event, message, ...extra });
      if (json) ctx.out.json({ ts, event, message, ...extra });
      else ctx.out.line(`${ts} ${message}`);
    },
  };
}

/** What a start line says the daemon watches. */
function watching(explicit: readonly string[], roots: readonly string[]): string {
  if (explicit.length === 1) return explicit[0]!;
  if (explicit.length > 1) return `${explicit.length} projects (${explicit.join(", ")})`;
  return `every registered project (${roots.length} now${
    roots.length > 0 ? `: ${roots.join(", ")}` : ""
  })`;
}

/** The project the daemon is started in, when it holds sessions (one from before the registry). */
async function hereWithSessions(ctx: Context): Promise<string | null> {
  const { root } = await discoverRoot(ctx.cwd, ctx.env);
  const sessions = projectPaths(root).sessions;
  return await Deno.stat(sessions).then((info) => info.isDirectory ? root : null, () => null);
}

/**
 * The daemon's instance lock: one daemon per set of roots, and one for every registered project
 * (a lock of its own name). Throws, naming the holder, when another daemon has it.
 */
async function lockFor(ctx: Context, ownRoot: string, explicit: readonly string[]) {
  const id = explicit.length > 0
    ? `roots-${shortHash([...explicit].sort().join("\n"))}`
    : "registered";
  const base = joinPath(ownRoot, "daemon", id);
  const acquired = await acquireInstanceLock(base, ctx.pid, { root: ownRoot });
  if ("heldBy" in acquired) {
    throw new CliError(
      `already running (pid ${acquired.heldBy ?? "unknown"})`,
      `one daemon per set of roots; its lock is ${base}.lock`,
    );
  }
  return acquired.lock;
}

export async function run(ctx: Context): Promise<number> {
  const args = parse(ctx.args);
  const explicit = [
    ...new Set(await Promise.all(args.roots.map((root) => existingRoot(root, ctx.cwd)))),
  ];
  const here = explicit.length > 0 ? null : await hereWithSessions(ctx);
  const ownRoot = await ownStateRoot(ctx.env);
  const lock = await lockFor(ctx, ownRoot, explicit);
  const logPath = eventLogPath(ctx.env, "daemon");
  const log = eventSink(logPath, { root: ownRoot });
  const out = renderer(ctx, args.json, log);
  const daemon = new StaleDaemon({ ...ctx, report: out.report, say: out.say }, args);
  const dropped: string[] = [];
  const roots = () => daemonRoots(ctx.env, { explicit, here, dropped: (r) => dropped.push(r) });
  const sayDropped = () => {
    for (const root of dropped.splice(0)) {
      out.say("root_dropped", `${root} no longer exists; dropped it from the registry`, { root });
    }
  };
  try {
    const config = await loadConfig(ctx.env, explicit[0]);
    const intervalSeconds = args.intervalSeconds ?? config.stale.intervalSeconds;
    let current = await roots();
    out.say(
      "start",
      `watching ${watching(explicit, current)} every ${intervalSeconds} s` +
        `${args.revive ? "; reviving dead tmux sessions" : ""}; log ${logPath}`,
      { roots: current, interval_s: intervalSeconds, revive: args.revive, log_file: logPath },
    );
    while (!ctx.signal.aborted) {
      sayDropped();
      await daemon.tick(current);
      await log.flush();
      if (args.once) break;
      await sleep(intervalSeconds * 1000, ctx.signal);
      if (!ctx.signal.aborted) current = await roots();
    }
    if (ctx.signal.aborted) out.say("stopped", "stopped");
  } finally {
    await log.flush();
    await lock.release();
  }
  return EXIT.ok;
}
