/**
 * lifeline's entry point: the one impure edge. It turns the real process (arguments, environment,
 * streams, signals, clock) into a {@linkcode Context}, runs the command, and exits with its code.
 *
 * @module
 */

import manifest from "./deno.json" with { type: "json" };
import { runCli } from "./commands/dispatch.ts";
import type { Context } from "./lib/core/cli.ts";
import { streamOutput } from "./lib/core/output.ts";

if (import.meta.main) {
  const abort = new AbortController();
  // Long-running commands (watchers, daemons) watch the signal and stop cleanly. A command that
  // does not, or does not manage to, is stopped after a grace period, as the default would.
  const stop = () => {
    if (abort.signal.aborted) Deno.exit(130);
    abort.abort();
    Deno.unrefTimer(setTimeout(() => Deno.exit(130), 5000));
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    if (Deno.build.os !== "windows" || signal === "SIGINT") Deno.addSignalListener(signal, stop);
  }
  const ctx: Context = {
    args: Deno.args,
    env: Deno.env.toObject(),
    cwd: Deno.cwd(),
    pid: Deno.pid,
    ppid: Deno.ppid,
    stdin: Deno.stdin,
    out: streamOutput(Deno.stdout, Deno.stderr),
    now: () => Date.now(),
    random: Math.random,
    timeZone: () => Intl.DateTimeFormat().resolvedOptions().timeZone,
    hostname: () => Deno.hostname(),
    signal: abort.signal,
  };
  Deno.exit(await runCli(ctx, manifest.version));
}
