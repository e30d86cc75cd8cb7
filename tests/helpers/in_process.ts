/**
 * Runs `lifeline <args>` inside the test's own process, through the same `runCli` that `main.ts`
 * calls, with a Context built here: no child process, no start-up cost. For tests of what a
 * command does; tests of what a user's shell sees (exit codes of the real binary, signals,
 * stdin pipes) start the binary instead (`lifeline.ts`).
 *
 * @module
 */

import { bytesReader, type Context } from "../../lib/core/cli.ts";
import { memoryOutput } from "../../lib/core/output.ts";
import { runCli } from "../../commands/dispatch.ts";

/** What an in-process run printed and returned. */
export interface InProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `lifeline <args>` from `cwd` with environment `env` (nothing else of the test's). `out`
 * lets a test read what a long-running command printed so far.
 */
export async function runInProcess(
  args: readonly string[],
  {
    cwd,
    env,
    stdin = "",
    now = Date.now,
    signal = new AbortController().signal,
    out = memoryOutput(),
  }: {
    cwd: string;
    env: Record<string, string>;
    stdin?: string;
    now?: () => number;
    signal?: AbortSignal;
    out?: ReturnType<typeof memoryOutput>;
  },
): Promise<InProcessResult> {
  const ctx: Context = {
    args,
    env,
    cwd,
    pid: Deno.pid,
    ppid: 1,
    stdin: bytesReader(stdin),
    out,
    now,
    random: Math.random,
    timeZone: () => "UTC",
    hostname: () => "test-host",
    signal,
  };
  const code = await runCli(ctx, "test");
  return { code, stdout: out.stdout, stderr: out.stderr };
}
