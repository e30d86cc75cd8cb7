/**
 * `deno task bench`: lifeline's benchmarks, reported as ratios measured in the same run.
 *
 * Usage: deno task bench [--rounds N] [--json]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { hookInput, transcriptPath } from "../tests/helpers/fixtures.ts";
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

  const failure = await hookInput("hh-tool-fail", "PostToolUseFailure");
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
    {
      name: "hook track (PostToolUse)",
      args: ["hook", "track"],
      stdin: withCwd(await hookInput("hh-tool-ok", "PostToolUse")),
    },
    {
      name: "hook track (PostToolUseFailure)",
      args: ["hook", "track"],
      // A session per run would be closer to life but grows state; the count just climbs.
      stdin: withCwd(failure),
    },
    {
      name: "hook crash (SessionStart, 200 sessions)",
      args: ["hook", "crash"],
      stdin: withCwd(await hookInput("hh-text", "SessionStart")),
      prepare: () => populateSessions(project, 200),
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

/**
 * `count` sessions, each with a fresh loop state, a heartbeat and a registry entry whose transcript
 * is a real one (so the previous session's transcript tail is read, as in life).
 */
async function populateSessions(root: string, count: number): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const transcript = `${root}/transcript.jsonl`;
  await Deno.copyFile(transcriptPath("hh-tool-fail"), transcript);
  for (let i = 0; i < count; i++) {
    const dir = `${root}/sessions/bench-${i}`;
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/ralph.json`,
      JSON.stringify({ active: true, last_checked_at: now, iteration: i }),
    );
    await Deno.writeTextFile(`${dir}/heartbeat`, `${now}\n`);
    await Deno.writeTextFile(
      `${dir}/session.json`,
      JSON.stringify({ session_id: `bench-${i}`, root, transcript_path: transcript }),
    );
  }
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
