/**
 * `lifeline status`: what lifeline knows right now, in one screen or one JSON object.
 *
 * @module
 */

import { type Context, existingRoot, EXIT } from "../lib/core/cli.ts";
import { loadConfig } from "../lib/state/config.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { readKillSwitch } from "../lib/state/kill_switch.ts";
import { assessSession, assessSessionSync, type PaneIndex } from "../lib/sessions/liveness.ts";
import { peekAdvice } from "../lib/advice/outbox.ts";
import { joinPath } from "../lib/core/path.ts";
import { harnessPaths, killSwitchPath, sessionPaths, stateDir } from "../lib/state/layout.ts";
import { watchStateCodec } from "../lib/watch/state.ts";
import {
  describeError,
  listNames,
  numberCodec,
  readState,
  readStateText,
} from "../lib/state/store.ts";
import { listSessions } from "../lib/sessions/session_list.ts";
import { peekState } from "../lib/harness/files.ts";

export const help = `Usage: lifeline status [--root DIR] [--json]

Shows, for the project and this user:

  sessions        id, heartbeat age, alive / dead / scavenged / unknown, tmux pane
  watched panes   what the tmux watcher tracks: state, limited until, attempts, refusals
  breakers        open circuit breakers (.EnjoyHarness/.circuit-breaker-task-*)
  iterations      the loop harness's global iteration budget: at max_iterations every task's
                  failure is answered "global breaker open" until \`lifeline fail reset --global\`
  tools           tools at or over the fallback threshold (consecutive failures)
  outbox          advice waiting for the next prompt
  kill switch     whether the self-heal reminder is on

Options:
  --root DIR   the project (default: .)
  --json       everything as one JSON object
  -h, --help`;

/** Where {@linkcode gatherStatus} puts what the table needs beyond the JSON. */
const FINISHED = Symbol("finished sessions");

/** Everything `status` reports. */
export async function gatherStatus(ctx: Context, root: string) {
  const config = await loadConfig(ctx.env, root);
  const now = ctx.now();
  const index: PaneIndex = new Map();
  const sessions = [];
  const tools = [];
  const outbox = [];
  const finished = new Set<string>();
  for (const id of listSessions(root).ids) {
    let judged;
    try {
      const options = {
        now,
        staleAfterSeconds: config.stale.afterSeconds,
        panes: index,
        withRecord: true,
      };
      judged = assessSessionSync(root, id, options) ?? await assessSession(root, id, options);
    } catch (error) {
      sessions.push({
        id,
        heartbeat_age: null,
        state: "unknown",
        pane: null,
        reason: `could not be read: ${describeError(error)}`,
      });
      continue;
    }
    if (judged.state !== "unregistered") {
      sessions.push({
        id,
        heartbeat_age: judged.heartbeatAge,
        state: judged.state,
        pane: judged.record?.tmux_pane ?? null,
        reason: judged.reason,
      });
    }
    // A finished session's counters and advice will never be read again.
    if (judged.finished) {
      finished.add(id);
      continue;
    }
    const paths = sessionPaths(root, id);
    for (const name of await listNames(paths.dir)) {
      const tool = /^fail-count-(.+)\.txt$/.exec(name)?.[1];
      if (!tool) continue;
      const count = await readState(joinPath(paths.dir, name), numberCodec, { root })
        .catch(() => undefined);
      if (count?.kind === "ok" && count.value >= config.toolFallback.threshold) {
        tools.push({ session: id, tool, failures: count.value });
      }
    }
    const advice = await peekAdvice(root, id).catch(() => []);
    if (advice.length > 0) outbox.push({ session: id, advice: advice.map((a) => a.text) });
  }

  const watched = [];
  const ownRoot = stateDir(ctx.env);
  const watchDir = joinPath(ownRoot, "watch");
  for (const name of await listNames(watchDir)) {
    if (!name.endsWith(".json")) continue;
    // A watcher's state being written or corrupt, or an older version's: doctor reports it.
    const state = await readState(joinPath(watchDir, name), watchStateCodec, { root: ownRoot })
      .catch(() => null);
    if (state?.kind !== "ok") continue;
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    for (const pane of Object.values(state.value.panes)) {
      watched.push({
        server: state.value.server.socket,
        pane: pane.pane,
        session: pane.session,
        state: pane.state,
        signal: pane.signal ?? null,
        limited_until: iso(pane.reset_at),
        resume_at: iso(pane.resume_at),
        attempts: pane.attempts,
        resumed: pane.resumed,
        gave_up: pane.gave_up,
        paused: pane.paused === true,
        // The watcher's own words: a refusal it made, or the prompt it will not type into.
        refusal: pane.refusal ?? (pane.state === "dangerous_prompt" ? pane.reason : null),
      });
    }
  }

  const breakers = [];
  const harness = harnessPaths(root);
  for (const name of await listNames(harness.dir)) {
    const task = /^\.circuit-breaker-task-(.+)$/.exec(name)?.[1];
    if (!task) continue;
    const text = await readStateText(joinPath(harness.dir, name), { root }).catch(() => "");
    breakers.push({
      task,
      triggered_at: /^triggered_at: (.+)$/m.exec(text)?.[1] ?? null,
      error_count: Number(/^error_count: (\d+)$/m.exec(text)?.[1] ?? NaN) || null,
    });
  }
  const killSwitch = await readKillSwitch(killSwitchPath(ctx.env));
  const harnessState = await peekState(root).catch(() => null);
  return {
    root,
    kill_switch: { state: killSwitch.state, path: killSwitch.path },
    sessions,
    watched_panes: watched,
    breakers,
    iterations: harnessState &&
      { current: harnessState.current_iteration, max: harnessState.max_iterations },
    tools_over_threshold: tools,
    outbox,
    /** Not printed with --json: the finished sessions, which the table counts instead of listing. */
    [FINISHED]: { ids: finished, pruneAfterDays: config.stale.pruneAfterDays },
  };
}

function age(seconds: number | null): string {
  if (seconds === null) return "never";
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => "  " + r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, { root: { type: "string" }, json: { type: "boolean" } });
  const root = await existingRoot(values.root, ctx.cwd);
  const s = await gatherStatus(ctx, root);
  if (values.json) {
    ctx.out.json(s);
    return EXIT.ok;
  }
  const out = (line: string) => ctx.out.line(line);
  out(`lifeline status for ${root}`);
  out(`self-heal: ${s.kill_switch.state} (${s.kill_switch.path})`);
  const { ids: finished, pruneAfterDays } = s[FINISHED];
  const listed = s.sessions.filter((x) => !finished.has(x.id));
  out(listed.length === 0 ? "sessions: none" : "sessions:");
  if (listed.length > 0) {
    // One write for the table: a project can hold thousands of sessions.
    out(
      table([
        ["id", "heartbeat", "state", "pane"],
        ...listed.map((x) => [x.id, age(x.heartbeat_age), x.state, x.pane ?? "-"]),
      ]).join("\n"),
    );
  }
  if (finished.size > 0) {
    out(
      `finished sessions: ${finished.size} (ended, or scavenged with the handoff delivered; ` +
        `deleted after ${pruneAfterDays} days idle; --json lists them)`,
    );
  }
  out(s.watched_panes.length === 0 ? "watched panes: none" : "watched panes:");
  if (s.watched_panes.length > 0) {
    table([
      ["server", "pane", "state", "limited until", "attempts", "refusal"],
      ...s.watched_panes.map((p) => [
        p.server,
        p.pane,
        p.paused ? "paused" : p.resumed ? "resumed" : p.gave_up ? "gave up" : p.state,
        p.limited_until ?? "-",
        String(p.attempts),
        p.refusal ?? "-",
      ]),
    ]).forEach(out);
  }
  out(
    `open breakers: ${
      s.breakers.length === 0
        ? "none"
        : s.breakers.map((b) => `${b.task} (${b.error_count ?? "?"} failures)`).join(", ")
    }`,
  );
  if (s.iterations) {
    const { current, max } = s.iterations;
    out(
      `iteration budget: ${current}/${max}${
        current >= max ? " (global breaker open: every task stops)" : ""
      }; reset with \`lifeline fail reset --global\``,
    );
  }
  out(
    `tools at the fallback threshold: ${
      s.tools_over_threshold.length === 0
        ? "none"
        : s.tools_over_threshold.map((t) => `${t.tool} x${t.failures} (${t.session})`).join(", ")
    }`,
  );
  out(s.outbox.length === 0 ? "pending advice: none" : "pending advice:");
  for (const box of s.outbox) for (const text of box.advice) out(`  ${box.session}: ${text}`);
  return EXIT.ok;
}
