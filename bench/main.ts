/**
 * `deno task bench`: lifeline's benchmarks, reported as ratios measured in the same run.
 *
 * Usage: deno task bench [--rounds N] [--json]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { hookInput } from "../tests/helpers/fixtures.ts";
import { childEnv } from "../tests/helpers/lifeline.ts";
import { type LatencyResult, measureHookLatency } from "./hook_latency.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "30" }, json: { type: "boolean" } },
});
const rounds = Number(values.rounds);

const work = await Deno.makeTempDir({ prefix: "lifeline-bench-" });
try {
  const project = `${work}/project`;
  await Deno.mkdir(project);
  const env = childEnv({ HOME: `${work}/home` });
  const withCwd = (input: Record<string, unknown>) => JSON.stringify({ ...input, cwd: project });

  const hooks = await measureHookLatency([
    {
      name: "hook heartbeat (PostToolUse)",
      args: ["hook", "heartbeat"],
      stdin: withCwd(await hookInput("hh-tool-ok", "PostToolUse")),
    },
    {
      name: "hook remind (UserPromptSubmit)",
      args: ["hook", "remind"],
      stdin: withCwd(await hookInput("hh-tool-ok", "UserPromptSubmit")),
    },
  ], { rounds, env, cwd: work });

  if (values.json) {
    Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify({ rounds, hooks }) + "\n"));
  } else {
    report(`Hook latency, ${rounds} interleaved rounds (median, p90, ratio to floor)`, hooks);
  }
} finally {
  await Deno.remove(work, { recursive: true });
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
  Deno.stdout.writeSync(new TextEncoder().encode(lines.join("\n") + "\n"));
}
