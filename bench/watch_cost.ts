/**
 * What the tmux watcher costs: one scan per pane (20 agent panes showing a limit banner that
 * resets later, so every scan reads, judges and waits), and the watcher's CPU while it idles
 * between scans, over a minute.
 *
 * @module
 */

import { childEnv, lifelineCommand, spawnLifeline } from "../tests/helpers/lifeline.ts";
import { agentScreen } from "../tests/helpers/screens.ts";
import { TmuxHarness } from "../tests/helpers/tmux_harness.ts";

/** The results. */
export interface WatchCost {
  panes: number;
  /** Median wall time of `watch tmux --once` with the agent panes, and with none. */
  onceWithPanesMs: number;
  onceWithoutMs: number;
  perPaneMs: number;
  /** CPU time the idle watcher used over `idleSeconds`, and as a share of one core. */
  idleSeconds: number;
  idleCpuMs: number;
  idleCpuPercent: number;
}

async function timeOnce(socket: string, work: string): Promise<number> {
  const { program, args } = lifelineCommand();
  const started = performance.now();
  const result = await new Deno.Command(program, {
    args: [...args, "watch", "tmux", "--socket", socket, "--once", "--root", work],
    stdout: "null",
    stderr: "null",
    clearEnv: true,
    env: childEnv({ HOME: `${work}/home`, TZ: "UTC" }),
  }).output();
  if (!result.success) throw new Error(`watch --once exited ${result.code}`);
  return performance.now() - started;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** CPU time (user + system) of a process so far, in ms: /proc on Linux, `ps` elsewhere. */
async function cpuMs(pid: number): Promise<number> {
  if (Deno.build.os === "linux") {
    const stat = await new Deno.Command("cat", { args: [`/proc/${pid}/stat`] }).output();
    const fields = new TextDecoder().decode(stat.stdout).split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, 10 ms clock ticks
  }
  const out = await new Deno.Command("ps", { args: ["-o", "cputime=", "-p", String(pid)] })
    .output();
  const parts = new TextDecoder().decode(out.stdout).trim().split(":").map(Number);
  return parts.reduce((total, part) => total * 60 + part, 0) * 1000;
}

/** Measures the scan cost with `panes` agents and the idle CPU over `idleSeconds`. */
export async function measureWatchCost(
  work: string,
  { panes = 20, rounds = 7, idleSeconds = 60 } = {},
): Promise<WatchCost> {
  // Two servers, measured in alternating rounds so that noise hits both alike: one with only a
  // shell pane, one with the agents too. Their difference is the cost of the agent panes.
  const empty = new TmuxHarness(`${work}/empty`);
  const tmux = new TmuxHarness(`${work}/agents`);
  try {
    await Deno.mkdir(empty.dir, { recursive: true });
    await Deno.mkdir(tmux.dir, { recursive: true });
    const shell = agentScreen({ conversation: ["$ ls"] });
    await empty.addAgent(shell, { command: "bash" });
    await tmux.addAgent(shell, { command: "bash" });
    const reset = Math.floor(Date.now() / 1000) + 3 * 3600;
    const screen = agentScreen({
      conversation: ["> go on", `  ⎿  Claude AI usage limit reached|${reset}`],
    });
    for (let i = 0; i < panes; i++) await tmux.addAgent(screen);
    const without: number[] = [];
    const withPanes: number[] = [];
    for (let i = 0; i < rounds; i++) {
      without.push(await timeOnce(empty.socket, work));
      withPanes.push(await timeOnce(tmux.socket, work));
    }

    const watcher = spawnLifeline(["watch", "tmux", "--socket", tmux.socket, "--root", work], {
      env: { HOME: `${work}/home`, TZ: "UTC" },
    });
    const reader = watcher.stdout.getReader();
    for (let seen = 0; seen < panes;) {
      const { value } = await reader.read(); // the first scan's lines
      seen += new TextDecoder().decode(value).split("\n").filter(Boolean).length;
    }
    const before = await cpuMs(watcher.pid);
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    const after = await cpuMs(watcher.pid);
    watcher.kill("SIGTERM");
    await watcher.status;
    reader.releaseLock();
    await watcher.stdout.cancel();
    await watcher.stderr.cancel();

    const withMs = median(withPanes);
    const withoutMs = median(without);
    return {
      panes,
      onceWithPanesMs: withMs,
      onceWithoutMs: withoutMs,
      perPaneMs: (withMs - withoutMs) / panes,
      idleSeconds,
      idleCpuMs: after - before,
      idleCpuPercent: (after - before) / (idleSeconds * 10),
    };
  } finally {
    await tmux.close();
    await empty.close();
  }
}
