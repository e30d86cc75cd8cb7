/**
 * `deno task bench`: lifeline's benchmarks, reported as ratios measured in the same run.
 *
 * Usage: deno task bench [--rounds N] [--only hooks,watch,daemon,sessions] [--json]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { childEnv } from "../tests/helpers/lifeline.ts";
import { hookCases } from "./hook_cases.ts";
import { type LatencyResult, measureHookLatency } from "./hook_latency.ts";
import { measureScavengeCost } from "./scavenge_cost.ts";
import { measureSessionsCost, type SessionsCost } from "./sessions_cost.ts";
import { measureWatchCost, type WatchCost } from "./watch_cost.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "30" },
    json: { type: "boolean" },
    only: { type: "string" },
  },
});
const rounds = Number(values.rounds);
const wanted = (name: string) => values.only === undefined || values.only.split(",").includes(name);
const results: Record<string, unknown> = { rounds };

const work = await Deno.makeTempDir({ prefix: "lifeline-bench-" });
try {
  if (wanted("hooks")) results.hooks = await benchHooks(`${work}/hooks`);
  if (wanted("watch")) results.watch = await benchWatch(`${work}/watch`);
  if (wanted("daemon")) results.daemon = await benchDaemon(`${work}/daemon`);
  if (wanted("sessions")) results.sessions = await benchSessions(`${work}/sessions`);
  if (values.json) say(JSON.stringify(results));
} finally {
  await Deno.remove(work, { recursive: true });
}

function say(text: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(text + "\n"));
}

async function benchHooks(dir: string): Promise<LatencyResult[]> {
  const project = `${dir}/project`;
  await Deno.mkdir(project, { recursive: true });
  const env = childEnv({ HOME: `${dir}/home` });
  const hooks = await measureHookLatency(await hookCases(project), { rounds, env, cwd: dir });
  if (!values.json) {
    report(`Hook latency, ${rounds} interleaved rounds (median, p90, ratio to floor)`, hooks);
  }
  return hooks;
}

async function benchWatch(dir: string): Promise<WatchCost> {
  await Deno.mkdir(dir, { recursive: true });
  const cost = await measureWatchCost(dir, { panes: 20, idleSeconds: 60 });
  if (!values.json) {
    say(`tmux watcher, ${cost.panes} agent panes`);
    say(
      `  watch tmux --once: ${cost.onceWithPanesMs.toFixed(0)} ms with the panes, ${
        cost.onceWithoutMs.toFixed(0)
      } ms without: ${cost.perPaneMs.toFixed(1)} ms per pane and scan`,
    );
    say(
      `  idle watcher CPU over ${cost.idleSeconds} s: ${cost.idleCpuMs} ms (${
        cost.idleCpuPercent.toFixed(3)
      }% of one core)`,
    );
  }
  return cost;
}

async function benchDaemon(dir: string) {
  await Deno.mkdir(dir, { recursive: true });
  const cost = await measureScavengeCost(dir);
  if (!values.json) {
    say("Stale-session daemon");
    for (const run of cost.runs) {
      say(
        `  scavenger, ${run.megabytes.toFixed(0)} MB transcript (${run.shape}): ${
          run.mbPerSecond.toFixed(0)
        } MB/s, ` +
          `peak RSS ${run.peakRssMiB.toFixed(1)} MiB (at start ${run.baseRssMiB.toFixed(1)}), ` +
          `peak JS heap ${run.peakHeapMiB.toFixed(1)} MiB`,
      );
    }
    say(
      `  daemon stale --once over 1000 live sessions: ${cost.tick.withMs.toFixed(0)} ms ` +
        `(${cost.tick.withoutMs.toFixed(0)} ms with none)`,
    );
  }
  return cost;
}

async function benchSessions(dir: string): Promise<SessionsCost> {
  await Deno.mkdir(dir, { recursive: true });
  const cost = await measureSessionsCost(dir);
  if (!values.json) {
    say(`${cost.sessions} finished sessions (and 20 live ones), median of 5 runs (3 for the tick)`);
    say(`  lifeline status:        ${cost.statusMs.toFixed(0)} ms`);
    say(`  lifeline status --json: ${cost.statusJsonMs.toFixed(0)} ms`);
    say(`  hook crash:             ${cost.hookCrashMs.toFixed(0)} ms`);
    say(`  daemon stale --once:    ${cost.daemonTickMs.toFixed(0)} ms`);
    say(`  the tick that prunes them all: ${cost.pruneTickMs.toFixed(0)} ms`);
  }
  return cost;
}

function report(title: string, rows: LatencyResult[]): void {
  const width = Math.max(...rows.map((r) => r.name.length));
  const lines = [
    title,
    ...rows.map((r) =>
      `  ${r.name.padEnd(width)}  ${r.medianMs.toFixed(1).padStart(6)} ms  ${
        r.p90Ms.toFixed(1).padStart(6)
      } ms  ${r.ratio.toFixed(2)}x`
    ),
  ];
  say(lines.join("\n"));
}
