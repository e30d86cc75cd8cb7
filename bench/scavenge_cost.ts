/**
 * What the stale-session daemon costs: the scavenger's throughput and peak memory on generated
 * transcripts of 20 MB and 200 MB (memory must not grow with the file), and one daemon tick over
 * 1,000 session directories.
 *
 * @module
 */

import { childEnv, lifelineCommand, REPO_DIR } from "../tests/helpers/lifeline.ts";

/** Writes a transcript of about `bytes` made of the row shapes of reference §5. */
export async function generateTranscript(path: string, bytes: number): Promise<number> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const encoder = new TextEncoder();
  let written = 0;
  let turn = 0;
  try {
    while (written < bytes) {
      turn++;
      const ts = new Date(Date.UTC(2026, 10, 30) + turn * 1000).toISOString();
      const common = {
        cwd: "/home/user/project",
        sessionId: "bench",
        gitBranch: "main",
        timestamp: ts,
      };
      const rows = [
        {
          type: "user",
          ...common,
          promptId: `p${turn}`,
          message: { role: "user", content: `Step ${turn}: refactor module ${turn % 97}` },
        },
        {
          type: "api-request-blob",
          ...common,
          content: [{ type: "text", text: "x".repeat(6000) }],
        },
        {
          type: "assistant",
          ...common,
          message: {
            id: `m${turn}`,
            model: "claude-sonnet-5",
            role: "assistant",
            content: [{ type: "text", text: `Working on step ${turn}. `.repeat(20) }],
          },
        },
        {
          type: "assistant",
          ...common,
          message: {
            id: `m${turn}`,
            model: "claude-sonnet-5",
            role: "assistant",
            content: [{
              type: "tool_use",
              id: `t${turn}`,
              name: turn % 3 ? "Bash" : "Edit",
              input: {
                command: `npm test -- ${turn}`,
                file_path: `/home/user/project/src/m${turn % 500}.ts`,
              },
            }],
          },
        },
        {
          type: "user",
          ...common,
          promptId: `p${turn}`,
          message: {
            role: "user",
            content: [{
              type: "tool_result",
              tool_use_id: `t${turn}`,
              content: "ok ".repeat(200),
              is_error: turn % 7 === 0,
            }],
          },
        },
        { type: "attachment", ...common, attachment: { type: "todo", content: "y".repeat(500) } },
      ];
      const chunk = encoder.encode(rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
      for (let done = 0; done < chunk.length;) done += await file.write(chunk.subarray(done));
      written += chunk.length;
    }
  } finally {
    file.close();
  }
  return written;
}

/** One scavenger run, in a child of its own so its memory is its own. */
export interface ScavengeRun {
  megabytes: number;
  ms: number;
  mbPerSecond: number;
  peakRssMiB: number;
  peakHeapMiB: number;
  baseRssMiB: number;
}

async function scavengeInChild(path: string, bytes: number): Promise<ScavengeRun> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--allow-read", `${REPO_DIR}/bench/scavenge_child.ts`, path],
    stdout: "piped",
    env: childEnv(),
    clearEnv: true,
  }).output();
  const r = JSON.parse(new TextDecoder().decode(out.stdout));
  const mib = (n: number) => n / (1 << 20);
  return {
    megabytes: bytes / 1e6,
    ms: r.ms,
    mbPerSecond: bytes / 1e6 / (r.ms / 1000),
    peakRssMiB: mib(r.peakRss),
    peakHeapMiB: mib(r.peakHeap),
    baseRssMiB: mib(r.baseRss),
  };
}

/** Times `daemon stale --once` over `count` live session directories, and over none. */
async function tickCost(
  work: string,
  count: number,
): Promise<{ withMs: number; withoutMs: number }> {
  const { program, args } = lifelineCommand();
  const time = async (root: string) => {
    const started = performance.now();
    const result = await new Deno.Command(program, {
      args: [...args, "daemon", "stale", "--once", "--root", root],
      stdout: "null",
      stderr: "null",
      env: childEnv({ HOME: `${work}/home` }),
      clearEnv: true,
    }).output();
    if (!result.success) throw new Error("daemon stale failed");
    return performance.now() - started;
  };
  const empty = `${work}/empty`;
  const full = `${work}/full`;
  await Deno.mkdir(empty, { recursive: true });
  const now = Math.floor(Date.now() / 1000);
  for (let i = 0; i < count; i++) {
    const dir = `${full}/sessions/s${i}`;
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/heartbeat`, `${now}\n`);
    await Deno.writeTextFile(
      `${dir}/session.json`,
      JSON.stringify({
        session_id: `s${i}`,
        root: full,
        cwd: full,
        transcript_path: null,
        tmux_pane: null,
        tmux_socket: null,
        agent_pid: null,
        first_seen: "x",
        last_seen: "x",
        last_event: "PostToolUse",
      }),
    );
  }
  const runs = (n: number, root: string) =>
    Promise.all([]).then(async () => {
      const times = [];
      for (let i = 0; i < n; i++) times.push(await time(root));
      return times.sort((a, b) => a - b)[Math.floor(n / 2)]!;
    });
  return { withoutMs: await runs(5, empty), withMs: await runs(5, full) };
}

/** All of it. */
export async function measureScavengeCost(work: string) {
  const small = `${work}/t20.jsonl`;
  const large = `${work}/t200.jsonl`;
  const smallBytes = await generateTranscript(small, 20e6);
  const largeBytes = await generateTranscript(large, 200e6);
  const runs = [await scavengeInChild(small, smallBytes), await scavengeInChild(large, largeBytes)];
  await Deno.remove(small);
  await Deno.remove(large);
  const tick = await tickCost(work, 1000);
  return { runs, tick };
}
