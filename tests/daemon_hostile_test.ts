// One bad session never stops the daemon (or `status`) for every other one: a tmux server that
// does not answer, a transcript that never ends or is terabytes long, a transcript that makes a
// regex backtrack. Each row registers that session beside a plain dead one, `b-normal`, and the
// daemon must finish its tick, in time, with b-normal scavenged. Real tmux, real files.
import assert from "node:assert/strict";
import { runLifeline } from "./helpers/lifeline.ts";
import { registerSession } from "./helpers/sessions.ts";
import { withTempDir } from "./helpers/temp.ts";
import { withTmux } from "./helpers/tmux_harness.ts";
import { agentScreen } from "./helpers/screens.ts";

const IGNORE = Deno.build.os !== "linux";

interface Line {
  session: string;
  state: string;
  action: string;
  reason: string;
}

/** One tick of the daemon, which must end within `timeoutMs`. */
async function tick(dir: string, timeoutMs: number): Promise<{ lines: Line[]; ms: number }> {
  const started = performance.now();
  const result = await runLifeline(
    ["daemon", "stale", "--once", "--json", "--root", `${dir}/project`],
    { env: { HOME: `${dir}/home` }, timeoutMs },
  );
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line));
  return { lines: lines.filter((line) => !line.event), ms: performance.now() - started };
}

/** A plain dead session: an hour without a heartbeat, its agent gone, a short transcript. */
async function deadNeighbour(dir: string): Promise<void> {
  const transcript = `${dir}/b.jsonl`;
  await Deno.writeTextFile(transcript, '{"type":"user","message":{"content":"hi"}}\n');
  await registerSession(`${dir}/project`, "b-normal", { heartbeatAgo: 3600, transcript });
}

function assertNeighbourScavenged(lines: Line[]): void {
  const b = lines.find((line) => line.session === "b-normal");
  assert.equal(b?.action, "scavenge", JSON.stringify(lines));
}

Deno.test({
  name: "a tmux server that does not answer is unknown: the tick and status go on",
  ignore: IGNORE,
  fn: async () => {
    await withTempDir(async (dir) => {
      await withTmux(dir, async (tmux) => {
        const pane = await tmux.addAgent(agentScreen({ conversation: ["● Working…"] }));
        const pid = Number((await tmux.run(["display-message", "-p", "#{pid}"])).trim());
        await registerSession(`${dir}/project`, "a-tmux", {
          heartbeatAgo: 3600,
          record: { tmux_pane: pane.id, tmux_socket: await tmux.socketPath() },
        });
        await deadNeighbour(dir);
        Deno.kill(pid, "SIGSTOP");
        try {
          const { lines } = await tick(dir, 25_000);
          assertNeighbourScavenged(lines);
          const status = await runLifeline(["status", "--json", "--root", `${dir}/project`], {
            env: { HOME: `${dir}/home` },
            timeoutMs: 25_000,
          });
          assert.equal(status.code, 0, status.stderr);
        } finally {
          Deno.kill(pid, "SIGCONT");
        }
      });
    });
  },
});

Deno.test({
  name: "a transcript that never ends, or is terabytes long, cannot hold up a tick",
  ignore: IGNORE,
  fn: async (t) => {
    const rows: [string, (dir: string) => Promise<string>][] = [
      // A regular file of size 0 whose read blocks once it is drained.
      ["/proc/kmsg", () => Promise.resolve("/proc/kmsg")],
      ["a sparse file of 10 TB", async (dir) => {
        const path = `${dir}/sparse.jsonl`;
        await Deno.writeFile(path, new Uint8Array());
        await Deno.truncate(path, 10 * 2 ** 40); // sparse: no block is written
        return path;
      }],
    ];
    for (const [name, make] of rows) {
      await t.step(name, async () => {
        await withTempDir(async (dir) => {
          const transcript = await make(dir);
          await registerSession(`${dir}/project`, "a-odd", { heartbeatAgo: 3600, transcript });
          await deadNeighbour(dir);
          const { lines, ms } = await tick(dir, 20_000);
          assertNeighbourScavenged(lines);
          assert.equal(lines.find((line) => line.session === "a-odd")?.action, "scavenge");
          assert.ok(ms < 15_000, `the tick took ${ms.toFixed(0)} ms`);
        });
      });
    }
  },
});
