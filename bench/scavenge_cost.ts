/**
 * What the stale-session daemon costs: the scavenger's throughput and peak memory on generated
 * transcripts of 20 MB and 300 MB, and of 800 MB made of 4,000 Write calls of 200 KB that never
 * got a result (memory must not grow with the file, nor with what is pending), and one daemon tick
 * over 1,000 session directories.
 *
 * @module
 */

import {
  childEnv,
  lifelineCommand,
  lifelinePermissionFlags,
  REPO_DIR,
} from "../tests/helpers/lifeline.ts";

/** An id shaped like the client's (`toolu_01…`, `msg_01…`): long enough never to be interned. */
function clientId(prefix: string, n: number): string {
  return `${prefix}_01${n.toString(36).padStart(22, "0")}`;
}

/**
 * Writes a transcript of about `bytes` made of the row shapes of reference §5 and the captures:
 * message rows lead with `parentUuid` and carry UUIDs, metadata rows lead with their type.
 */
export async function generateTranscript(path: string, bytes: number): Promise<number> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const encoder = new TextEncoder();
  let written = 0;
  let turn = 0;
  let parentUuid: string | null = null;
  const message = (type: string, body: Record<string, unknown>) => {
    const uuid = crypto.randomUUID();
    const row = {
      parentUuid,
      isSidechain: false,
      ...body,
      type,
      uuid,
      timestamp: new Date(Date.UTC(2026, 10, 30) + turn * 1000).toISOString(),
      cwd: "/home/user/project",
      sessionId: "e9a51d2e-c3c6-4b15-aad1-4ab164f1f631",
      version: "2.1.328",
      gitBranch: "main",
    };
    parentUuid = uuid;
    return row;
  };
  try {
    while (written < bytes) {
      turn++;
      const promptId = crypto.randomUUID();
      const messageId = clientId("msg", turn);
      const toolId = clientId("toolu", turn);
      const rows = [
        message("user", {
          promptId,
          message: { role: "user", content: `Step ${turn}: refactor module ${turn % 97}` },
        }),
        {
          type: "api-request-blob",
          timestamp: new Date().toISOString(),
          content: [{ type: "text", text: "x".repeat(6000) }],
        },
        message("assistant", {
          message: {
            id: messageId,
            model: "claude-sonnet-5",
            role: "assistant",
            content: [{ type: "text", text: `Working on step ${turn}. `.repeat(20) }],
          },
        }),
        message("assistant", {
          message: {
            id: messageId,
            model: "claude-sonnet-5",
            role: "assistant",
            content: [{
              type: "tool_use",
              id: toolId,
              name: turn % 3 ? "Bash" : "Edit",
              input: {
                command: `npm test -- ${turn}`,
                file_path: `/home/user/project/src/m${turn % 500}.ts`,
              },
            }],
          },
        }),
        message("user", {
          promptId,
          message: {
            role: "user",
            content: [{
              type: "tool_result",
              tool_use_id: toolId,
              content: "ok ".repeat(200),
              is_error: turn % 7 === 0,
            }],
          },
        }),
        message("attachment", { attachment: { type: "todo", content: "y".repeat(500) } }),
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

/**
 * Writes a transcript of `calls` Write tool calls of `bytes` each and no results: a session killed
 * in the middle of writing files, the shape that once made the scavenger hold every input.
 */
export async function generatePendingWrites(
  path: string,
  calls: number,
  bytes: number,
): Promise<number> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const encoder = new TextEncoder();
  let written = 0;
  try {
    for (let i = 0; i < calls; i++) {
      const row = {
        type: "assistant",
        cwd: "/home/user/project",
        sessionId: "bench",
        timestamp: new Date(Date.UTC(2026, 10, 30) + i * 1000).toISOString(),
        message: {
          id: clientId("msg", i),
          model: "claude-sonnet-5",
          role: "assistant",
          content: [{
            type: "tool_use",
            id: clientId("toolu", i),
            name: "Write",
            input: {
              file_path: `/home/user/project/src/gen${i}.ts`,
              content: `// file ${i}\n` + "x".repeat(bytes),
            },
          }],
        },
      };
      const chunk = encoder.encode(JSON.stringify(row) + "\n");
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
  /** What the transcript is made of. */
  shape: string;
  megabytes: number;
  ms: number;
  mbPerSecond: number;
  peakRssMiB: number;
  peakHeapMiB: number;
  baseRssMiB: number;
}

async function scavengeInChild(path: string, bytes: number, shape: string): Promise<ScavengeRun> {
  const out = await new Deno.Command(Deno.execPath(), {
    // With the binary's flags: its V8 settings decide how far the heap grows.
    args: [
      "run",
      "--quiet",
      ...lifelinePermissionFlags(),
      `${REPO_DIR}/bench/scavenge_child.ts`,
      path,
    ],
    stdout: "piped",
    env: childEnv(),
    clearEnv: true,
  }).output();
  const r = JSON.parse(new TextDecoder().decode(out.stdout));
  const mib = (n: number) => n / (1 << 20);
  return {
    shape,
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

/** All of it. Each transcript is generated, scavenged and removed before the next. */
export async function measureScavengeCost(work: string) {
  const runs: ScavengeRun[] = [];
  const shapes: [string, (path: string) => Promise<number>][] = [
    ["sessions", (path) => generateTranscript(path, 20e6)],
    ["sessions", (path) => generateTranscript(path, 300e6)],
    ["4000 pending Writes of 200 KB", (path) => generatePendingWrites(path, 4000, 200_000)],
  ];
  for (const [shape, generate] of shapes) {
    const path = `${work}/transcript.jsonl`;
    const bytes = await generate(path);
    runs.push(await scavengeInChild(path, bytes, shape));
    await Deno.remove(path);
  }
  const tick = await tickCost(work, 1000);
  return { runs, tick };
}
