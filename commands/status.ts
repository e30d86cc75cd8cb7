/**
 * `lifeline status`: what lifeline knows right now, in one screen or one JSON object.
 *
 * @module
 */

import { type Context, EXIT } from "../lib/core/cli.ts";
import { loadConfig } from "../lib/state/config.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { readKillSwitch } from "../lib/state/kill_switch.ts";
import { hostEvidence, type PaneIndex } from "../lib/sessions/liveness.ts";
import { peekAdvice } from "../lib/advice/outbox.ts";
import { absolutePath, joinPath } from "../lib/core/path.ts";
import {
  harnessPaths,
  killSwitchPath,
  projectPaths,
  sessionPaths,
  stateDir,
  validateName,
} from "../lib/state/layout.ts";
import { judgeSession } from "../lib/sessions/stale_policy.ts";
import type { PaneRecord } from "../lib/watch/watch_policy.ts";
import { readHeartbeat, readSessionRecord } from "../lib/sessions/registry.ts";
import { listNames, numberCodec, readState } from "../lib/state/store.ts";
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

/**
 * Why the watcher will not type into a pane in this state. A refusal at the last look before
 * typing is recorded; a pane that shows a prompt is never a candidate, so it has none recorded.
 */
function standingRefusal(state: PaneRecord["state"]): string | null {
  if (state === "dangerous_prompt") return "a confirmation prompt is on screen: never typed into";
  return null;
}

/** Everything `status` reports. */
export async function gatherStatus(ctx: Context, root: string) {
  const config = await loadConfig(ctx.env, root);
  const now = ctx.now();
  const index: PaneIndex = new Map();
  const sessions = [];
  const tools = [];
  const outbox = [];
  for (const id of await listNames(projectPaths(root).sessions)) {
    try {
      validateName("session id", id);
    } catch {
      continue;
    }
    const paths = sessionPaths(root, id);
    const record = await readSessionRecord(root, id);
    const beat = await readHeartbeat(root, id);
    if (record || beat !== undefined) {
      const age = beat === undefined ? null : Math.max(0, Math.floor(now / 1000) - beat);
      const status = (await Deno.readTextFile(paths.status).catch(() => "")).trim();
      const fresh = age !== null && age <= config.stale.afterSeconds;
      const judged = status === "scavenged" && !fresh
        ? { state: "scavenged", reason: "its handoff is in handoffs/scavenged.md" }
        : judgeSession(
          age,
          fresh ? { pane: "unknown", process: "unknown" } : await hostEvidence(record, index),
          config.stale.afterSeconds,
        );
      sessions.push({
        id,
        heartbeat_age: age,
        state: judged.state,
        pane: record?.tmux_pane ?? null,
        reason: judged.reason,
      });
    }
    for (const name of await listNames(paths.dir)) {
      const tool = /^fail-count-(.+)\.txt$/.exec(name)?.[1];
      if (!tool) continue;
      const count = await readState(joinPath(paths.dir, name), numberCodec);
      if (count.kind === "ok" && count.value >= config.toolFallback.threshold) {
        tools.push({ session: id, tool, failures: count.value });
      }
    }
    const advice = await peekAdvice(root, id).catch(() => []);
    if (advice.length > 0) outbox.push({ session: id, advice: advice.map((a) => a.text) });
  }

  const watched = [];
  const watchDir = joinPath(stateDir(ctx.env), "watch");
  for (const name of await listNames(watchDir)) {
    if (!name.endsWith(".json")) continue;
    try {
      const state = JSON.parse(await Deno.readTextFile(joinPath(watchDir, name))) as {
        panes?: Record<string, PaneRecord>;
      };
      for (const pane of Object.values(state.panes ?? {})) {
        const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
        watched.push({
          server: name.replace(/\.json$/, ""),
          pane: pane.pane,
          session: pane.session,
          state: pane.state,
          limited_until: iso(pane.reset_at),
          resume_at: iso(pane.resume_at),
          attempts: pane.attempts,
          resumed: pane.resumed,
          gave_up: pane.gave_up,
          refusal: pane.refusal ?? standingRefusal(pane.state),
        });
      }
    } catch {
      // A watcher's state being written or corrupt: doctor reports it.
    }
  }

  const breakers = [];
  const harness = harnessPaths(root);
  for (const name of await listNames(harness.dir)) {
    const task = /^\.circuit-breaker-task-(.+)$/.exec(name)?.[1];
    if (!task) continue;
    const text = await Deno.readTextFile(joinPath(harness.dir, name)).catch(() => "");
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
  const root = absolutePath(values.root ?? ".", ctx.cwd);
  const s = await gatherStatus(ctx, root);
  if (values.json) {
    ctx.out.json(s);
    return EXIT.ok;
  }
  const out = (line: string) => ctx.out.line(line);
  out(`lifeline status for ${root}`);
  out(`self-heal: ${s.kill_switch.state} (${s.kill_switch.path})`);
  out(s.sessions.length === 0 ? "sessions: none" : "sessions:");
  if (s.sessions.length > 0) {
    table([
      ["id", "heartbeat", "state", "pane"],
      ...s.sessions.map((x) => [x.id, age(x.heartbeat_age), x.state, x.pane ?? "-"]),
    ]).forEach(out);
  }
  out(s.watched_panes.length === 0 ? "watched panes: none" : "watched panes:");
  if (s.watched_panes.length > 0) {
    table([
      ["server", "pane", "state", "limited until", "attempts", "refusal"],
      ...s.watched_panes.map((p) => [
        p.server,
        p.pane,
        p.resumed ? "resumed" : p.gave_up ? "gave up" : p.state,
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
