/**
 * Hook latency as a ratio to the floor: an empty Deno program that reads stdin and writes one
 * file, run with the same flags in the same rounds. Machines here are noisy, so the cases are
 * interleaved (one of each per round) and compared by median; absolute times vary, the ratio holds.
 * Every run, the floor's too, goes through `/bin/sh -c`, as the client runs hook commands: the hook
 * then has a new parent on every call, as it has in a real session.
 *
 * @module
 */

import { lifelineCommand, lifelinePermissionFlags, REPO_DIR } from "../tests/helpers/lifeline.ts";

/** One process to time. */
export interface LatencyCase {
  name: string;
  args: string[];
  stdin: string;
  /** Runs once before the timed rounds (state set-up that must not be timed). */
  prepare?: () => Promise<void>;
}

/** Timing of one case. */
export interface LatencyResult {
  name: string;
  medianMs: number;
  p90Ms: number;
  /** Median divided by the floor's median. */
  ratio: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function timeOnce(
  program: string,
  args: string[],
  stdin: string,
  env: Record<string, string>,
  cwd: string,
): Promise<number> {
  const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
  const started = performance.now();
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", [program, ...args].map(quote).join(" ")],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
    clearEnv: true,
    env,
    cwd,
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const status = await child.status;
  const elapsed = performance.now() - started;
  if (!status.success) throw new Error(`${args.join(" ")} exited ${status.code}`);
  return elapsed;
}

/**
 * Times each case against the floor over `rounds` interleaved rounds (after `warmup` untimed ones).
 * `env` is the children's whole environment; `cwd` their working directory.
 */
export async function measureHookLatency(
  cases: LatencyCase[],
  { rounds, warmup = 5, env, cwd }: {
    rounds: number;
    warmup?: number;
    env: Record<string, string>;
    cwd: string;
  },
): Promise<LatencyResult[]> {
  const floorOut = `${cwd}/floor.out`;
  const { program, args: lifelineArgs } = lifelineCommand();
  const runs = [
    {
      name: "floor (read stdin, write a file)",
      args: [
        "run",
        "--quiet",
        ...lifelinePermissionFlags(),
        `${REPO_DIR}/bench/floor.ts`,
        floorOut,
      ],
      stdin: cases[0]?.stdin ?? "{}",
    },
    ...cases.map((c) => ({ ...c, args: [...lifelineArgs, ...c.args] })),
  ];
  for (const c of cases) await c.prepare?.();
  const samples = runs.map(() => [] as number[]);
  for (let round = 0; round < warmup + rounds; round++) {
    for (const [index, run] of runs.entries()) {
      const ms = await timeOnce(program, run.args, run.stdin, env, cwd);
      if (round >= warmup) samples[index]!.push(ms);
    }
  }
  const medians = samples.map((s) => percentile(s.sort((a, b) => a - b), 0.5));
  return runs.map((run, index) => ({
    name: run.name,
    medianMs: medians[index]!,
    p90Ms: percentile(samples[index]!, 0.9),
    ratio: medians[index]! / medians[0]!,
  }));
}
