// `lifeline daemon stale` with real tmux panes, real processes and real transcripts.
import assert from "node:assert/strict";
import { lookupProcess } from "../lib/host/proc.ts";
import { hookInput, transcriptPath } from "./helpers/fixtures.ts";
import { parseHookStdout, runLifeline, spawnLifeline } from "./helpers/lifeline.ts";
import { agentScreen } from "./helpers/screens.ts";
import { withTempDir } from "./helpers/temp.ts";
import { type AgentPane, type TmuxHarness, withTmux } from "./helpers/tmux_harness.ts";

const IGNORE = Deno.build.os === "windows";

interface Registered {
  heartbeatAgo: number;
  pane?: { tmux: TmuxHarness; pane: AgentPane };
  pid?: number;
  /** Epoch ms, or a `ps -o lstart` text as earlier versions recorded it. */
  started?: number | string;
  startId?: string | undefined;
  transcript?: string | null;
}

/** Registers a session the way `hook heartbeat` does. */
async function register(dir: string, id: string, s: Registered): Promise<string> {
  const sessionDir = `${dir}/project/sessions/${id}`;
  await Deno.mkdir(sessionDir, { recursive: true });
  await Deno.writeTextFile(
    `${sessionDir}/heartbeat`,
    `${Math.floor(Date.now() / 1000) - s.heartbeatAgo}\n`,
  );
  await Deno.writeTextFile(
    `${sessionDir}/session.json`,
    JSON.stringify({
      session_id: id,
      root: `${dir}/project`,
      cwd: `${dir}/project`,
      transcript_path: s.transcript === undefined ? transcriptPath("hh-tool-fail") : s.transcript,
      tmux_pane: s.pane?.pane.id ?? null,
      tmux_socket: s.pane ? await s.pane.tmux.socketPath() : null,
      agent_pid: s.pid ?? null,
      agent_command: "claude",
      agent_started: s.started ?? null,
      agent_start_id: s.startId ?? null,
      first_seen: new Date().toISOString(),
      last_seen: new Date().toISOString(),
      last_event: "PostToolUse",
    }),
  );
  return sessionDir;
}

interface Line {
  session: string;
  state: string;
  action: string;
  reason: string;
  heartbeat_age: number | null;
}

async function tick(dir: string): Promise<Line[]> {
  const result = await runLifeline(
    ["daemon", "stale", "--once", "--json", "--root", `${dir}/project`],
    { env: { HOME: `${dir}/home` } },
  );
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line));
  // The first line says what it watches; the others are the sessions'.
  assert.equal(lines[0]?.event, "start");
  return lines.slice(1);
}

async function sleeper(): Promise<
  { child: Deno.ChildProcess; started: number; startId?: string | undefined }
> {
  const child = new Deno.Command("sleep", { args: ["120"] }).spawn();
  const found = await lookupProcess(child.pid);
  if (found.kind !== "running") throw new Error(`sleep ${child.pid} not found: ${found.kind}`);
  return { child, started: found.info.startedMs, startId: found.info.startId };
}

async function stop(child: Deno.ChildProcess): Promise<void> {
  try {
    child.kill("SIGKILL");
  } catch {
    // already gone
  }
  await child.status;
}

const status = (dir: string, id: string) =>
  Deno.readTextFile(`${dir}/project/sessions/${id}/status`).then((t) => t.trim(), () => "");

Deno.test({
  name: "a session whose pane was killed and whose heartbeat is old is scavenged exactly once",
  ignore: IGNORE,
  async fn() {
    await withTempDir((dir) =>
      withTmux(dir, async (tmux) => {
        const pane = await tmux.addAgent(agentScreen({ conversation: ["❯ hi"] }));
        await tmux.addAgent(agentScreen({ conversation: ["❯ keeps the server up"] }));
        await register(dir, "dead1", { heartbeatAgo: 900, pane: { tmux, pane } });
        await tmux.killPane(pane);
        const first = await tick(dir);
        assert.deepEqual(first.map((l) => [l.session, l.state, l.action]), [[
          "dead1",
          "dead",
          "scavenge",
        ]]);
        assert.match(first[0]!.reason, /no heartbeat for 9\d\ds and its tmux pane is gone/);
        assert.equal(await status(dir, "dead1"), "scavenged");
        const handoffPath = `${dir}/project/sessions/dead1/handoffs/scavenged.md`;
        const handoff = await Deno.readTextFile(handoffPath);
        assert.match(handoff, /^# Handoff from session dead1\n/);
        assert.match(handoff, /## Last user prompts\n1\. run a failing command/);
        const before = (await Deno.stat(handoffPath)).mtime;
        const second = await tick(dir);
        assert.deepEqual(second.map((l) => [l.state, l.action]), [["scavenged", "none"]]);
        assert.deepEqual((await Deno.stat(handoffPath)).mtime, before, "not scavenged again");
        const log = await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`);
        assert.equal(log.trim().split("\n").filter((l) => l.includes('"scavenged"')).length, 1);
      })
    );
  },
});

Deno.test({
  name:
    "alive sessions are never scavenged: a fresh heartbeat; an old one with a live pane and pid",
  ignore: IGNORE,
  async fn() {
    await withTempDir((dir) =>
      withTmux(dir, async (tmux) => {
        const { child, started } = await sleeper();
        try {
          const pane = await tmux.addAgent(
            agentScreen({ conversation: ["❯ run the 20-minute build"] }),
          );
          // Fresh heartbeat, though its pane is long gone.
          const vanished = { id: "%999", session: "x", screenFile: "", logFile: "" };
          await register(dir, "fresh", { heartbeatAgo: 10, pane: { tmux, pane: vanished } });
          // Old heartbeat, but the pane and the agent are there: a long-running command.
          await register(dir, "waiting", {
            heartbeatAgo: 1200,
            pane: { tmux, pane },
            pid: child.pid,
            started,
          });
          const lines = await tick(dir);
          const by = Object.fromEntries(lines.map((l) => [l.session, l]));
          assert.equal(by.fresh!.state, "alive");
          assert.equal(by.waiting!.state, "alive");
          assert.match(by.waiting!.reason, /its host is still there/);
          assert.ok(lines.every((l) => l.action === "none"));
          assert.equal(await status(dir, "fresh"), "");
        } finally {
          await stop(child);
        }
      })
    );
  },
});

Deno.test({
  name:
    "a pid that died while its pane still exists, or that now belongs to another program, is dead",
  ignore: IGNORE,
  async fn() {
    await withTempDir((dir) =>
      withTmux(dir, async (tmux) => {
        // The pane is there, but the agent is not: it shows the shell the agent ran in.
        const pane = await tmux.addAgent(agentScreen({ conversation: ["❯ hi"] }), {
          command: "bash",
        });
        const gone = await sleeper();
        await stop(gone.child);
        await register(dir, "pid-died", {
          heartbeatAgo: 600,
          pane: { tmux, pane },
          pid: gone.child.pid,
          started: gone.started,
        });
        const other = await sleeper();
        try {
          // The pid is alive, but started at another time: a different program got the number.
          // As this version records it (epoch ms, and on Linux the boot id and clock ticks), and
          // as earlier versions did (an lstart text).
          const reused = {
            "pid-reused": { started: other.started - 3_600_000 },
            ...(Deno.build.os === "linux"
              ? { "pid-reused-ticks": { started: other.started, startId: "another-boot/12345" } }
              : {}),
            "pid-reused-lstart": { started: "Mon Jan  1 00:00:00 2024" },
          };
          for (const [id, start] of Object.entries(reused)) {
            await register(dir, id, {
              heartbeatAgo: 600,
              pane: { tmux, pane },
              pid: other.child.pid,
              ...start,
            });
          }
          const lines = await tick(dir);
          const by = Object.fromEntries(lines.map((l) => [l.session, l]));
          assert.equal(by["pid-died"]!.action, "scavenge");
          assert.match(by["pid-died"]!.reason, /its agent process is gone/);
          for (const id of Object.keys(reused)) {
            assert.equal(by[id]!.action, "scavenge", id);
            assert.match(by[id]!.reason, /its pid now belongs to another program/);
          }
        } finally {
          await stop(other.child);
        }
      })
    );
  },
});

Deno.test("a missing transcript still produces a handoff that says why", async () => {
  await withTempDir(async (dir) => {
    await register(dir, "lost", {
      heartbeatAgo: 900,
      pid: 999_999_98,
      transcript: `${dir}/gone.jsonl`,
    });
    await tick(dir);
    const handoff = await Deno.readTextFile(`${dir}/project/sessions/lost/handoffs/scavenged.md`);
    assert.match(handoff, /- Working directory: .*\/project/);
    assert.match(handoff, /## Notes\n- The transcript could not be read \(.*gone\.jsonl/);
  });
});

Deno.test("end to end: a dead session's handoff is offered to the next session, once", async () => {
  await withTempDir(async (dir) => {
    await register(dir, "crashed", { heartbeatAgo: 900, pid: 999_999_97 });
    await tick(dir);
    const start = await hookInput("hh-text", "SessionStart");
    const crash = async (sessionId: string) => {
      const result = await runLifeline(["hook", "crash"], {
        stdin: JSON.stringify({ ...start, session_id: sessionId, cwd: `${dir}/project` }),
        env: { HOME: `${dir}/home` },
      });
      return parseHookStdout(result.stdout, "SessionStart")?.hookSpecificOutput.additionalContext ??
        "";
    };
    const context = await crash("next-1");
    assert.match(context, /^\[CRASH RECOVERY\]/);
    assert.match(
      context,
      /Session crashed died without saving its work; .* Read sessions\/crashed\/handoffs\/scavenged\.md/,
    );
    assert.doesNotMatch(await crash("next-2"), /scavenged\.md/);
  });
});

Deno.test({
  name: "one daemon per set of roots; SIGTERM stops it cleanly",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await Deno.mkdir(`${dir}/project`);
      const args = ["daemon", "stale", "--interval", "1", "--root", `${dir}/project`];
      const env = { HOME: `${dir}/home` };
      const first = spawnLifeline(args, { env });
      await new Promise((r) => setTimeout(r, 1500));
      const second = await runLifeline(args, { env });
      assert.equal(second.code, 1);
      assert.match(second.stderr, new RegExp(`already running \\(pid ${first.pid}\\)`));
      first.kill("SIGTERM");
      assert.equal((await first.status).code, 0);
      await first.stdout.cancel();
      await first.stderr.cancel();
      const third = await runLifeline([...args, "--once"], { env });
      assert.equal(third.code, 0, "the lock was released");
    });
  },
});
