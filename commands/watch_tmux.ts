/**
 * `lifeline watch tmux`: rate-limit recovery for agents in tmux panes (spec/error-recovery.md
 * §5.1). Parses, builds the watcher (`lib/watch/engine.ts`) over the real tmux server, clock
 * and files, runs it, and renders what it does. It never types into a confirmation or
 * destructive prompt, and when unsure it does nothing and says why.
 *
 * @module
 */

import { CliError, type Context, existingRoot, EXIT, UsageError } from "../lib/core/cli.ts";
import { integerFlag, parseFlags } from "../lib/core/flags.ts";
import { dirName } from "../lib/core/path.ts";
import { ProgramMissingError, runProgram } from "../lib/host/process.ts";
import { expectedSocketPath, serverIdentity, type TmuxServer } from "../lib/host/tmux.ts";
import { loadConfig } from "../lib/state/config.ts";
import { appendEvent, eventLogPath } from "../lib/state/event_log.ts";
import { ownStateRoot } from "../lib/state/own_log.ts";
import type { PaneEvent } from "../lib/watch/engine.ts";
import { explainTmuxPane, type WatchOutput, watchSettings, watchTmux } from "../lib/watch/run.ts";

export const help =
  `Usage: lifeline watch tmux [--socket NAME | --socket-path PATH] [--target SESSION|%PANE]
                           [--interval 60] [--once] [--dry-run] [--root DIR] [--json]
       lifeline watch tmux --explain %PANE [--socket NAME | --socket-path PATH] [--root DIR]

Watches agent panes and resumes them after a rate limit resets. Each interval it looks at every
pane whose foreground program is the agent (watch.agentCommands, "claude" by default) or that a
registered session (hook heartbeat) names, and reads two signals:

  records  the session's own: the StopFailure hook track recorded, and the transcript's tail
           (API errors, their resetsAt, whether newer conversation came after)
  screen   the pane: conversation, input box, footer and status lines, at any width

and names the pane's state:

  usage_limit          a limit with its reset: wait for reset + margin, then resume
  native_autocontinue  the client will continue by itself: left alone until well after its time
  transient_api_error  a final 429/529/5xx at an idle prompt: resume after a backoff; after
                       3 such resumes in a row (retry.foregroundMax), report it instead
  busy                 working or retrying: never typed into
  permanent            login, billing or organisation trouble: reported, never typed into
  dangerous_prompt     a permission, confirmation or trust prompt: never typed into
  limit_menu           "What do you want to do?": only its "Stop and wait" choice gets an Enter
  normal               nothing to do

It types only into an idle agent's empty input box. Right before each keystroke it looks again:
the pane must be the same process, not synchronised with other panes, not in copy mode, and show
an empty input box (before the text) or exactly the resume text (before Enter), with no prompt,
dialog, busy row or armed auto-continue, and no confirmation or destructive word in its last 5
lines. Text and Enter are sent separately; afterwards it watches the pane to see that it worked.
One resume per pane per reset, staggered across panes, at most watch.maxAttempts attempts.

Options:
  --socket NAME        tmux server socket name (tmux -L)
  --socket-path PATH   tmux server socket path (tmux -S)
  --target T           watch only this session, or this pane (%id)
  --interval SECONDS   seconds between scans (default: watch.intervalSeconds, 60)
  --once               scan once, act on what is due now, and exit
  --dry-run            decide everything, type nothing, write no state
  --root DIR           project whose config and registered sessions to use (default: .)
  --explain %PANE      show how the pane is read (its parts, the rule, the records) and what
                       would be decided; types nothing
  --json               one JSON object per pane per change and per action:
                       {"ts","pane","session","state","signal","reset_at","action","reason"}
                       ("signal": "records", "screen" or "both"); lifecycle lines carry "event"
  -h, --help

Logs each action to the session's project (logs/error-recovery.log), or, for a pane with no
registered session, to lifeline's state directory. Exits 1 when another watcher already runs on
the same tmux server, when tmux is missing, or (with --once) when no server runs.`;

/** Parsed arguments. */
export interface WatchArgs {
  server: TmuxServer;
  target?: string;
  intervalSeconds?: number;
  once: boolean;
  dryRun: boolean;
  root?: string;
  json: boolean;
  explain?: string;
}

/** Parses `watch tmux` arguments. Throws UsageError. */
export function parse(args: readonly string[]): WatchArgs {
  const { values } = parseFlags(args, {
    socket: { type: "string" },
    "socket-path": { type: "string" },
    target: { type: "string" },
    interval: { type: "string" },
    once: { type: "boolean" },
    "dry-run": { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
    explain: { type: "string" },
  });
  if (values.socket !== undefined && values["socket-path"] !== undefined) {
    throw new UsageError("use --socket or --socket-path, not both");
  }
  if (values.explain !== undefined && !/^%\d+$/.test(values.explain)) {
    throw new UsageError(`--explain takes a pane id such as %3, got "${values.explain}"`);
  }
  const server: TmuxServer = values.socket !== undefined
    ? { socketName: values.socket }
    : values["socket-path"] !== undefined
    ? { socketPath: values["socket-path"] }
    : {};
  return {
    server,
    ...(values.target !== undefined ? { target: values.target } : {}),
    ...(values.interval !== undefined
      ? { intervalSeconds: integerFlag("interval", values.interval, 60, { min: 1, max: 86_400 }) }
      : {}),
    once: values.once === true,
    dryRun: values["dry-run"] === true,
    ...(values.root !== undefined ? { root: values.root } : {}),
    json: values.json === true,
    ...(values.explain !== undefined ? { explain: values.explain } : {}),
  };
}

async function requireTmux(): Promise<void> {
  try {
    await runProgram("tmux", ["-V"]);
  } catch (error) {
    if (!(error instanceof ProgramMissingError)) throw error;
    throw new CliError(
      "tmux is not installed, so there is nothing to watch",
      "install tmux (apt install tmux, brew install tmux)",
    );
  }
}

/** Renders what the watcher says, and keeps it in lifeline's own watch log (`log`, unless null). */
function renderer(
  ctx: Context,
  json: boolean,
  log: { path: string; root: string } | null,
): WatchOutput {
  let pending = Promise.resolve();
  const keep = (record: Record<string, unknown> & { ts: string }) => {
    if (!log) return;
    pending = pending.then(() => appendEvent(log.path, record, { root: log.root })).catch(() => {});
  };
  return {
    pane(event: PaneEvent): void {
      const ts = new Date(event.ts).toISOString();
      const reset_at = event.reset_at === null ? null : new Date(event.reset_at).toISOString();
      const { pane, session, state, signal, action, reason } = event;
      const line = { ts, pane, session, state, signal, reset_at, action, reason };
      keep({ ...line, root: event.root, ...(event.event ? { event: event.event } : {}) });
      if (json) ctx.out.json(line);
      else ctx.out.line(`${ts} ${pane} (${session}) ${state}: ${action} - ${reason}`);
    },
    say(event: string, message: string, extra: Record<string, unknown> = {}): void {
      const ts = new Date(ctx.now()).toISOString();
      keep({ ts, event, message, ...extra });
      if (json) ctx.out.json({ ts, event, message, ...extra });
      else ctx.out.line(`${ts} ${message}`);
    },
    flush: () => pending,
  };
}

export async function run(ctx: Context): Promise<number> {
  const args = parse(ctx.args);
  await requireTmux();
  const root = await existingRoot(args.root, ctx.cwd);
  const config = await loadConfig(ctx.env, root);
  const ownRoot = await ownStateRoot(ctx.env);
  const server = await serverIdentity(args.server);
  // The path this watcher connects through, not the one the server reports: a socket that was
  // renamed or moved still reports its first path, which another server may use by now.
  const uid = Deno.build.os === "windows" ? null : Deno.uid();
  const socket = expectedSocketPath(args.server, ctx.env, uid);
  if (!server && (args.once || args.explain)) {
    throw new CliError(
      `no tmux server runs on ${socket} (or its socket was moved or renamed)`,
      "start the agents' tmux server first, or name it with --socket NAME or --socket-path PATH",
    );
  }
  // A dry run (and --explain) writes nothing, its log included.
  const dry = args.dryRun || args.explain !== undefined;
  const out = renderer(
    ctx,
    args.json,
    dry ? null : { path: eventLogPath(ctx.env, "watch"), root: ownRoot },
  );
  const job = {
    env: ctx.env,
    pid: ctx.pid,
    now: ctx.now,
    random: ctx.random,
    signal: ctx.signal,
    ownRoot,
    root,
    config,
    settings: watchSettings(config, {
      dryRun: dry,
      ...(args.target !== undefined ? { target: args.target } : {}),
      localZone: ctx.timeZone(),
    }),
    server: args.server,
    socket,
    // Fixed, not $TMUX_TMPDIR's: two watchers with different environments still meet there.
    tmuxDir: dirName(expectedSocketPath({ socketName: "default" }, {}, uid)),
    named: "socketName" in args.server || "socketPath" in args.server,
    out,
  };
  if (args.explain) {
    const explained = await explainTmuxPane(job, server?.pid ?? null, args.explain);
    if (args.json) ctx.out.json(explained);
    else for (const line of explained.text) ctx.out.line(line);
    return EXIT.ok;
  }
  await watchTmux(job, {
    once: args.once,
    intervalMs: (args.intervalSeconds ?? config.watch.intervalSeconds) * 1000,
  });
  if (ctx.signal.aborted) out.say("stopped", "stopped");
  await out.flush();
  return EXIT.ok;
}
