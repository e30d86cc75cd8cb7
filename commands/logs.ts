/**
 * `lifeline logs`: what the tmux watcher and the stale-session daemon did, from their logs in
 * lifeline's state directory, merged, newest last, one line each; or followed as they grow.
 *
 * @module
 */

import { type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { ageFlag, integerFlag, parseFlags } from "../lib/core/flags.ts";
import { sleep } from "../lib/core/sleep.ts";
import { type EventLogName, eventLogPath } from "../lib/state/event_log.ts";
import { stateDir } from "../lib/state/layout.ts";
import {
  LogFollower,
  type LogRecord,
  parseRecord,
  READ_BYTES,
  readLogs,
} from "../lib/state/log_reader.ts";

export const help =
  `Usage: lifeline logs [watch|daemon] [--since AGE] [--lines N] [--follow] [--json]

Shows what \`lifeline watch tmux\` and \`lifeline daemon stale\` did and why: their logs in
lifeline's state directory (logs/watch.log, logs/daemon.log, and the previous file of each,
<name>.log.1), merged by time, newest last, one line each:

  <time> watch <pane> (<session>) <state>: <action> - <reason>
  <time> daemon <project>: session <id> <action> - <reason>
  <time> watch|daemon <what it said> (start, a server gone or back, a project dropped, stopped)

Options:
  watch | daemon   one log only (default: both)
  --since AGE      only what happened in the last AGE: a number and m, h or d (30m, 1h, 2d)
  --lines N        the last N entries (default: 100; with --since, all of them)
  --follow         then keep printing new entries as they are written, until Ctrl-C
  --json           the records as they are logged, one JSON object per line, with "log"
  -h, --help

Only the last ${READ_BYTES >> 20} MiB of each log file is read, however large it has grown.`;

const LOGS: readonly EventLogName[] = ["watch", "daemon"];

/** Parsed arguments. */
interface LogsArgs {
  logs: readonly EventLogName[];
  sinceMs: number | null;
  lines: number | null;
  follow: boolean;
  json: boolean;
}

function parse(args: readonly string[]): LogsArgs {
  const { values, positionals } = parseFlags(args, {
    since: { type: "string" },
    lines: { type: "string" },
    follow: { type: "boolean", short: "f" },
    json: { type: "boolean" },
  }, { maxPositionals: 1 });
  const which = positionals[0];
  if (which !== undefined && !LOGS.includes(which as EventLogName)) {
    throw new UsageError(`the log is "watch" or "daemon", got "${which}"`);
  }
  const sinceMs = values.since === undefined ? null : ageFlag("since", values.since, "1h");
  return {
    logs: which === undefined ? LOGS : [which as EventLogName],
    sinceMs,
    lines: values.lines !== undefined
      ? integerFlag("lines", values.lines, 100, { min: 1 })
      : sinceMs === null
      ? 100
      : null,
    follow: values.follow === true,
    json: values.json === true,
  };
}

/** One entry as a person reads it. */
function renderRecord({ log, record: r }: LogRecord): string {
  const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
  const head = `${r.ts} ${log}`;
  if (typeof r.message === "string") return `${head} ${r.message}`;
  if (typeof r.pane === "string") {
    return `${head} ${r.pane} (${text(r.session)}) ${text(r.state)}: ${text(r.action)} - ${
      text(r.reason)
    }`;
  }
  if (typeof r.session === "string" && typeof r.root === "string") {
    return `${head} ${r.root}: session ${r.session} ${text(r.action)} - ${text(r.reason)}`;
  }
  const { ts: _ts, ...rest } = r;
  return `${head} ${JSON.stringify(rest)}`;
}

function print(ctx: Context, json: boolean, records: readonly LogRecord[]): void {
  for (const entry of records) {
    if (json) ctx.out.json({ log: entry.log, ...entry.record });
    else ctx.out.line(renderRecord(entry));
  }
}

/** Prints new entries as they are written, until the command is stopped. */
async function follow(ctx: Context, args: LogsArgs, followers: Map<EventLogName, LogFollower>) {
  while (!ctx.signal.aborted) {
    await sleep(250, ctx.signal);
    const fresh: LogRecord[] = [];
    for (const [log, follower] of followers) {
      for (const line of await follower.poll()) {
        const parsed = parseRecord(log, line);
        if (parsed) fresh.push(parsed);
      }
    }
    print(ctx, args.json, fresh.sort((a, b) => a.at - b.at));
  }
  for (const follower of followers.values()) follower.close();
}

export async function run(ctx: Context): Promise<number> {
  const args = parse(ctx.args);
  // Followers first: what is written while the past is read is printed once, after it.
  const followers = new Map<EventLogName, LogFollower>();
  const ends: Record<string, number> = {};
  if (args.follow) {
    for (const log of args.logs) {
      const follower = new LogFollower(eventLogPath(ctx.env, log), stateDir(ctx.env));
      ends[follower.path] = await follower.start();
      followers.set(log, follower);
    }
  }
  const tail = await readLogs(ctx.env, args.logs, { ends });
  const since = args.sinceMs === null ? -Infinity : ctx.now() - args.sinceMs;
  const shown = tail.records.filter((r) => r.at >= since);
  const oldest = tail.records[0]?.at ?? Infinity;
  if (args.sinceMs !== null && tail.cut.length > 0 && oldest > since) {
    ctx.out.error(
      `lifeline: only the last ${READ_BYTES >> 20} MiB of ${tail.cut.join(", ")} was read; ` +
        "older entries are not shown",
    );
  }
  print(ctx, args.json, args.lines === null ? shown : shown.slice(-args.lines));
  if (args.follow) await follow(ctx, args, followers);
  return EXIT.ok;
}
