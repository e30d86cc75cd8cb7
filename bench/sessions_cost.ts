/**
 * What many session directories cost the commands that walk them: `status`, `hook crash` and a
 * `daemon stale` tick over a project with 20,000 finished sessions (half ended, half scavenged
 * with the handoff delivered, all idle for a day, so none is due for pruning) and a few live ones,
 * and the tick that prunes them once they are older than `stale.pruneAfterDays`.
 *
 * @module
 */

import { hookInput } from "../tests/helpers/fixtures.ts";
import { childEnv, lifelineCommand } from "../tests/helpers/lifeline.ts";

/** Median times, in ms. */
export interface SessionsCost {
  sessions: number;
  statusMs: number;
  statusJsonMs: number;
  hookCrashMs: number;
  daemonTickMs: number;
  /** The tick that deletes them all, once they are older than the prune age. */
  pruneTickMs: number;
}

/** Writes `count` finished sessions idle for `idleDays`, and `live` live ones. */
function populate(root: string, count: number, live: number, idleDays: number): void {
  const then = new Date(Date.now() - idleDays * 86_400_000);
  const now = Math.floor(Date.now() / 1000);
  for (let i = 0; i < count + live; i++) {
    const id = `s${String(i).padStart(5, "0")}`;
    const dir = `${root}/sessions/${id}`;
    const finished = i < count;
    Deno.mkdirSync(`${dir}/handoffs`, { recursive: true });
    const beat = finished ? Math.floor(then.getTime() / 1000) : now;
    Deno.writeTextFileSync(`${dir}/heartbeat`, `${beat}\n`);
    Deno.writeTextFileSync(
      `${dir}/session.json`,
      JSON.stringify({
        session_id: id,
        root,
        cwd: root,
        transcript_path: null,
        tmux_pane: null,
        tmux_socket: null,
        agent_pid: null,
        first_seen: then.toISOString(),
        last_seen: then.toISOString(),
        last_event: "PostToolUse",
      }),
    );
    if (!finished) continue;
    const word = i % 2 === 0 ? "scavenged" : "ended";
    if (word === "scavenged") {
      Deno.writeTextFileSync(`${dir}/handoffs/scavenged.md`, "# Handoff\n");
      Deno.writeTextFileSync(`${dir}/handoffs/scavenged.md.offered`, "{}\n");
    }
    Deno.writeTextFileSync(`${dir}/status`, `${word}\n`);
    Deno.utimeSync(`${dir}/status`, then, then);
    // The mark lifeline writes when a session finishes (see markFinished in registry.ts).
    Deno.writeTextFileSync(`${dir}/finished`, `${word}\n`);
    Deno.utimeSync(`${dir}/finished`, then, then);
  }
}

async function median(runs: number, once: () => Promise<number>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await once());
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

/** Times the commands over `count` finished sessions (and 20 live ones) in `work`. */
export async function measureSessionsCost(work: string, count = 20_000): Promise<SessionsCost> {
  const root = `${work}/project`;
  populate(root, count, 20, 1);
  const { program, args } = lifelineCommand();
  const env = childEnv({ HOME: `${work}/home` });
  const time = async (extra: string[], stdin?: string) => {
    const started = performance.now();
    const child = new Deno.Command(program, {
      args: [...args, ...extra],
      stdin: stdin === undefined ? "null" : "piped",
      stdout: "null",
      stderr: "null",
      env,
      clearEnv: true,
    }).spawn();
    if (stdin !== undefined) {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(stdin));
      await writer.close();
    }
    const status = await child.status;
    if (!status.success) throw new Error(`lifeline ${extra.join(" ")} exited ${status.code}`);
    return performance.now() - started;
  };
  const start = JSON.stringify({ ...await hookInput("hh-text", "SessionStart"), cwd: root });
  const cost = {
    sessions: count,
    statusMs: await median(5, () => time(["status", "--root", root])),
    statusJsonMs: await median(5, () => time(["status", "--json", "--root", root])),
    hookCrashMs: await median(5, () => time(["hook", "crash"], start)),
    daemonTickMs: await median(3, () => time(["daemon", "stale", "--once", "--root", root])),
    pruneTickMs: 0,
  };
  await Deno.mkdir(`${root}/.lifeline`, { recursive: true });
  await Deno.writeTextFile(
    `${root}/.lifeline/config.json`,
    JSON.stringify({ stale: { pruneAfterDays: 0.5 } }),
  );
  cost.pruneTickMs = await time(["daemon", "stale", "--once", "--root", root]);
  return cost;
}
