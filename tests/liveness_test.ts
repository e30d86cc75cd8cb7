// The one liveness judgement shared by `daemon stale`, `status` and `hook crash`, tried the way an
// attacker or an unlucky user would: agents in other time zones, hooks behind wrappers, a tmux
// socket removed from under a live server, odd entries in sessions/, a judge run with another
// --stale-after. Real agents (processes that run their hooks through `sh -c`, as Claude Code
// does), real tmux servers, real files.
import assert from "node:assert/strict";
import { hookInput } from "./helpers/fixtures.ts";
import {
  type HookAgent,
  hookAgentLaunch,
  startHookAgent,
  waitForLines,
} from "./helpers/hook_agent_process.ts";
import { ownLogLines, parseHookStdout, REPO_DIR, runLifeline } from "./helpers/lifeline.ts";
import { agentScreen } from "./helpers/screens.ts";
import { withTmux } from "./helpers/tmux_harness.ts";
import { pidNamespace } from "../lib/host/proc.ts";
import { onPath } from "../lib/host/self.ts";
import { registerSession } from "./helpers/sessions.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os !== "linux";

interface Line {
  session: string;
  state: string;
  action: string;
  reason: string;
}

const NOW_S = () => Math.floor(Date.now() / 1000);

/** The PostToolUse input of session `id` in the project under `dir`. */
async function toolInput(dir: string, id: string): Promise<string> {
  return JSON.stringify({
    ...await hookInput("hh-tool-ok", "PostToolUse"),
    session_id: id,
    cwd: `${dir}/project`,
  });
}

/** Starts an agent of session `id` whose hook command is `command`. */
async function startAgent(dir: string, id: string, command: string): Promise<HookAgent> {
  return await startHookAgent(dir, await toolInput(dir, id), { HOME: `${dir}/home` }, {
    name: id,
    command,
  });
}

const sessionFile = (dir: string, id: string, name: string) =>
  `${dir}/project/sessions/${id}/${name}`;

const readRecord = async (dir: string, id: string) =>
  JSON.parse(await Deno.readTextFile(sessionFile(dir, id, "session.json")));

/** Makes the session's last heartbeat `seconds` old, as if it had gone quiet. */
async function backdate(dir: string, id: string, seconds: number): Promise<void> {
  await Deno.writeTextFile(sessionFile(dir, id, "heartbeat"), `${NOW_S() - seconds}\n`);
}

async function tick(dir: string, ...extra: string[]): Promise<Line[]> {
  const result = await runLifeline(
    ["daemon", "stale", "--once", "--json", "--root", `${dir}/project`, ...extra],
    { env: { HOME: `${dir}/home`, TZ: "UTC" } },
  );
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line))
    .filter((line) => !line.event); // the start line
}

/** A session as `status --json` shows it. */
interface Shown {
  id: string;
  state: string;
  reason: string;
}

async function statusOf(dir: string): Promise<Shown[]> {
  const result = await runLifeline(["status", "--json", "--root", `${dir}/project`], {
    env: { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` },
  });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout).sessions;
}

const bySession = (lines: Line[]) => Object.fromEntries(lines.map((l) => [l.session, l]));

Deno.test({
  name: "an agent in TZ=Asia/Tokyo is the same process to a daemon in UTC",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const agent = await startAgent(dir, "tokyo", "TZ=Asia/Tokyo lifeline hook heartbeat");
      try {
        assert.equal((await readRecord(dir, "tokyo")).agent_pid, agent.pid);
        await backdate(dir, "tokyo", 900);
        const line = bySession(await tick(dir)).tokyo!;
        assert.deepEqual([line.state, line.action], ["alive", "none"], line.reason);
        assert.match(line.reason, /its agent process runs/);
        const record = await readRecord(dir, "tokyo");
        assert.equal(typeof record.agent_started, "number", "a number, not a local-time text");
      } finally {
        await agent.stop();
      }
    });
  },
});

Deno.test({
  name: "a record from an earlier version (lstart text in the agent's zone) is read, then migrated",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const agent = await startAgent(dir, "legacy", "lifeline hook heartbeat");
      try {
        // What earlier versions wrote: `ps -o lstart` in the hook's zone.
        const ps = await new Deno.Command("ps", {
          args: ["-o", "lstart=", "-p", String(agent.pid)],
          env: { TZ: "Asia/Tokyo", LC_ALL: "C" },
        }).output();
        const lstart = new TextDecoder().decode(ps.stdout).trim().replace(/\s+/g, " ");
        const record = await readRecord(dir, "legacy");
        const { agent_start_id: _, ...old } = { ...record, agent_started: lstart };
        await Deno.writeTextFile(sessionFile(dir, "legacy", "session.json"), JSON.stringify(old));
        await backdate(dir, "legacy", 900);
        const line = bySession(await tick(dir)).legacy!;
        assert.deepEqual([line.state, line.action], ["alive", "none"], line.reason);

        await agent.again();
        const migrated = await readRecord(dir, "legacy");
        assert.equal(typeof migrated.agent_started, "number");
        assert.equal(migrated.agent_pid, agent.pid);
      } finally {
        await agent.stop();
      }
    });
  },
});

Deno.test({
  name: "the agent is found past wrappers in the hook command, and outlives them",
  ignore: IGNORE,
  async fn(t) {
    await withTempDir(async (dir) => {
      const commands = {
        "timeout": "timeout 60 lifeline hook heartbeat",
        "env-nice-timeout": "env FOO=1 nice -n 1 timeout 60 lifeline hook heartbeat",
        "stdbuf-nohup-in-a-shell": "stdbuf -oL nohup lifeline hook heartbeat; exit 0",
        "timeout-in-timeout": "timeout 60 timeout 50 lifeline hook heartbeat",
      };
      for (const [name, command] of Object.entries(commands)) {
        await t.step(name, async () => {
          const agent = await startAgent(dir, name, command);
          try {
            const record = await readRecord(dir, name);
            assert.equal(record.agent_pid, agent.pid, `the agent, not a wrapper (${command})`);
            assert.equal(record.agent_command, "deno");
            await backdate(dir, name, 900);
            const line = bySession(await tick(dir))[name]!;
            assert.deepEqual([line.state, line.action], ["alive", "none"], line.reason);
          } finally {
            await agent.stop();
          }
        });
      }
    });
  },
});

/** A private tmux server of the test's own; `kill()` works even after its socket is gone. */
function tmuxServer(dir: string) {
  const name = `lifeline-test-${crypto.randomUUID().slice(0, 8)}`;
  const run = async (...args: string[]) => {
    const out = await new Deno.Command("tmux", { args: ["-L", name, ...args], stderr: "piped" })
      .output();
    if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout).trim();
  };
  return {
    run,
    /** Starts an agent in a pane of its own; its hooks see the pane in $TMUX and $TMUX_PANE. */
    async agentPane(id: string, command?: string): Promise<{ pane: string; agentPid: number }> {
      const launch = await hookAgentLaunch(dir, id, await toolInput(dir, id), {
        env: { HOME: `${dir}/home` },
        ...(command ? { command } : {}),
      });
      const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
      const env = Object.entries(launch.env).map(([k, v]) => `${k}=${quote(v)}`).join(" ");
      const line = [launch.program, ...launch.args].map(quote).join(" ");
      await run("new-session", "-d", "-s", id, `exec env ${env} ${line}`);
      await waitForLines(launch.done, 1);
      const [pane, pid] = (await run("list-panes", "-t", `=${id}`, "-F", "#{pane_id} #{pane_pid}"))
        .split(" ");
      return { pane: pane!, agentPid: Number(pid) };
    },
    async kill(): Promise<void> {
      const pid = Number(await run("display-message", "-p", "#{pid}").catch(() => "0"));
      await run("kill-server").catch(() => {});
      if (pid > 0) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    },
  };
}

Deno.test({
  name: "a removed tmux socket proves nothing: a live agent is alive, one without a pid unknown",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const server = tmuxServer(dir);
      let serverPid = 0;
      try {
        const first = await server.agentPane("in-pane");
        const second = await server.agentPane("no-pid");
        const record = await readRecord(dir, "in-pane");
        assert.equal(record.tmux_pane, first.pane);
        assert.equal(record.agent_pid, first.agentPid, "the agent runs in the pane");
        // The same, but recorded without a pid (an agent lifeline could not look up).
        const other = await readRecord(dir, "no-pid");
        assert.equal(other.tmux_pane, second.pane);
        await Deno.writeTextFile(
          sessionFile(dir, "no-pid", "session.json"),
          JSON.stringify({ ...other, agent_pid: null, agent_started: null }),
        );
        await backdate(dir, "in-pane", 900);
        await backdate(dir, "no-pid", 900);
        serverPid = Number(await server.run("display-message", "-p", "#{pid}"));
        // tmpfiles cleaning /tmp: the server and its panes run on, unreachable.
        await Deno.remove(record.tmux_socket);

        const lines = bySession(await tick(dir));
        assert.deepEqual(
          [lines["in-pane"]!.state, lines["in-pane"]!.action],
          ["alive", "none"],
          lines["in-pane"]!.reason,
        );
        assert.deepEqual(
          [lines["no-pid"]!.state, lines["no-pid"]!.action],
          ["unknown", "none"],
          lines["no-pid"]!.reason,
        );
        const shown = Object.fromEntries((await statusOf(dir)).map((s) => [s.id, s]));
        assert.equal(shown["in-pane"]!.state, "alive");
        assert.equal(shown["no-pid"]!.state, "unknown");
      } finally {
        await server.kill();
        if (serverPid > 0) {
          try {
            Deno.kill(serverPid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
    });
  },
});

Deno.test({
  name: "a launcher that stays as the hook's parent is never taken for the agent",
  ignore: IGNORE,
  async fn(t) {
    const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
    const launcher = `${quote(Deno.execPath())} run -A ${
      quote(`${REPO_DIR}/tests/helpers/launcher.ts`)
    }`;
    const commands: Record<string, string> = {
      // The npm `deno` shim and npx: `node bin.cjs run … main.ts hook heartbeat`.
      "a launcher that passes the command line on": `${launcher} lifeline hook heartbeat`,
    };
    if (await onPath("strace", Deno.env.get("PATH"))) {
      commands.strace = "strace -f -o /dev/null lifeline hook heartbeat";
    }
    for (const [name, command] of Object.entries(commands)) {
      await t.step(name, async () => {
        await withTempDir(async (dir) => {
          const server = tmuxServer(dir);
          try {
            // A live agent in a live pane, idle (waiting for its user) for 6 minutes.
            const { agentPid } = await server.agentPane("s1", command);
            const record = await readRecord(dir, "s1");
            assert.equal(record.agent_pid, agentPid, `the agent, not the launcher (${command})`);
            await backdate(dir, "s1", 360);
            const line = bySession(await tick(dir)).s1!;
            assert.deepEqual([line.state, line.action], ["alive", "none"], line.reason);
          } finally {
            await server.kill();
          }
        });
      });
    }
  },
});

Deno.test({
  name: "a pane that still runs the agent is not dead because the recorded process is gone",
  ignore: IGNORE,
  async fn() {
    await withTempDir((dir) =>
      withTmux(dir, async (tmux) => {
        const pane = await tmux.addAgent(agentScreen({ conversation: ["❯ waiting"] }));
        await registerSession(`${dir}/project`, "s1", {
          heartbeatAgo: 900,
          record: {
            tmux_pane: pane.id,
            tmux_socket: await tmux.socketPath(),
            agent_command: "claude",
          },
        });
        const line = bySession(await tick(dir)).s1!;
        assert.deepEqual([line.state, line.action], ["unknown", "none"], line.reason);
        assert.match(line.reason, /its tmux pane still runs the agent/);
      })
    );
  },
});

/**
 * `unshare` with a pid namespace of its own (and, for a user who is not root, a user one). Its
 * child dies with it (`--kill-child`): killing `unshare` alone left the agent running.
 */
async function unshareArgs(): Promise<string[] | null> {
  const pid = ["--pid", "--fork", "--kill-child", "--mount-proc"];
  for (const args of [pid, ["-r", ...pid]]) {
    const out = await new Deno.Command("unshare", { args: [...args, "true"], stderr: "null" })
      .output().catch(() => null);
    if (out?.success) return args;
  }
  return null;
}

Deno.test({
  name: "an agent in another pid namespace or on another host is unknown, never dead",
  ignore: IGNORE,
  async fn(t) {
    const unshare = await unshareArgs();
    await t.step({
      name: "a container: the agent and its hooks in a pid namespace of their own",
      ignore: unshare === null,
      fn: async () => {
        await withTempDir(async (dir) => {
          const launch = await hookAgentLaunch(dir, "ctr", await toolInput(dir, "ctr"), {
            env: { HOME: `${dir}/home` },
          });
          const child = new Deno.Command("unshare", {
            args: [...unshare!, launch.program, ...launch.args],
            env: launch.env,
            clearEnv: true,
            stdin: "null",
            stdout: "null",
            stderr: "null",
          }).spawn();
          try {
            await waitForLines(launch.done, 1);
            const record = await readRecord(dir, "ctr");
            assert.notEqual(record.agent_pid_ns, pidNamespace());
            // Idle for 6 minutes; its pid, looked up here, is some other program or none.
            await backdate(dir, "ctr", 360);
            const line = bySession(await tick(dir)).ctr!;
            assert.deepEqual([line.state, line.action], ["unknown", "none"], line.reason);
            assert.match(line.reason, /another pid namespace/);
          } finally {
            child.kill("SIGKILL");
            await child.status;
          }
        });
      },
    });
    await t.step("a project shared with another machine", async () => {
      await withTempDir(async (dir) => {
        await registerSession(`${dir}/project`, "away", {
          heartbeatAgo: 900,
          record: { agent_host: "build-box-2", agent_pid_ns: pidNamespace() },
        });
        const line = bySession(await tick(dir)).away!;
        assert.deepEqual([line.state, line.action], ["unknown", "none"], line.reason);
      });
    });
  },
});

/** Registers a session whose agent is gone, as the heartbeat hook leaves it. */
async function deadSession(dir: string, id: string, heartbeatAgo = 900): Promise<string> {
  const gone = new Deno.Command("true").spawn();
  await gone.status;
  return await registerSession(`${dir}/project`, id, { heartbeatAgo, agentPid: gone.pid });
}

Deno.test({
  name: "one odd entry in sessions/ never stops the rest: it is logged and skipped",
  ignore: IGNORE,
  async fn(t) {
    const odd: Record<string, (sessionDir: string) => Promise<void>> = {
      "handoffs a file": (d) => Deno.writeTextFile(`${d}/handoffs`, "a file, not a directory"),
      "session.json a directory": async (d) => {
        await Deno.remove(`${d}/session.json`);
        await Deno.mkdir(`${d}/session.json`);
      },
    };
    for (const [name, spoil] of Object.entries(odd)) {
      await t.step(`the daemon: ${name}`, async () => {
        await withTempDir(async (dir) => {
          await spoil(await deadSession(dir, "a-odd"));
          await deadSession(dir, "b-normal");
          const lines = bySession(await tick(dir));
          assert.equal(lines["b-normal"]!.action, "scavenge", lines["b-normal"]!.reason);
          assert.equal(
            await Deno.readTextFile(sessionFile(dir, "b-normal", "status")),
            "scavenged\n",
          );
          assert.equal(lines["a-odd"]!.action, "none", lines["a-odd"]!.reason);
        });
      });
    }
    await t.step("the daemon logs what it could not check", async () => {
      await withTempDir(async (dir) => {
        await odd["handoffs a file"]!(await deadSession(dir, "a-odd"));
        const line = bySession(await tick(dir))["a-odd"]!;
        assert.match(line.reason, /could not be checked/);
        const log = await ownLogLines(`${dir}/home`);
        assert.ok(log.some((l) => /sessions\/a-odd could not be checked/.test(String(l.message))));
      });
    });
    await t.step(
      "status: session.json a directory, a file and a symlink in sessions/",
      async () => {
        await withTempDir(async (dir) => {
          const dirJson = await deadSession(dir, "a-dir-json");
          await Deno.remove(`${dirJson}/session.json`);
          await Deno.mkdir(`${dirJson}/session.json`);
          await deadSession(dir, "b-normal");
          await Deno.writeTextFile(`${dir}/project/sessions/notes.txt`, "not a session");
          await Deno.symlink("/", `${dir}/project/sessions/c-link`);
          const sessions = await statusOf(dir);
          assert.deepEqual(sessions.map((s) => [s.id, s.state]), [
            ["a-dir-json", "unknown"],
            ["b-normal", "dead"],
          ]);
        });
      },
    );
    await t.step("hook crash: a directory named 'old loop' beside a stale loop", async () => {
      await withTempDir(async (dir) => {
        const stale = JSON.stringify({ active: true, last_checked_at: NOW_S() - 3 * 3600 });
        for (const id of ["old loop", "real-loop"]) {
          await Deno.mkdir(`${dir}/project/sessions/${id}`, { recursive: true });
          await Deno.writeTextFile(`${dir}/project/sessions/${id}/ralph.json`, stale);
        }
        const result = await runLifeline(["hook", "crash"], {
          stdin: JSON.stringify({
            ...await hookInput("hh-text", "SessionStart"),
            cwd: `${dir}/project`,
          }),
          env: { HOME: `${dir}/home` },
        });
        assert.equal(result.code, 0);
        const context = parseHookStdout(result.stdout, "SessionStart")?.hookSpecificOutput
          .additionalContext;
        assert.match(context ?? "", /sessions\/real-loop\/ralph\.json: the loop was still marked/);
        const repaired = JSON.parse(
          await Deno.readTextFile(`${dir}/project/sessions/real-loop/ralph.json`),
        );
        assert.equal(repaired.active, false);
        assert.equal(
          await Deno.readTextFile(`${dir}/project/sessions/old loop/ralph.json`),
          stale,
          "not a session lifeline made: not touched",
        );
        const log = await ownLogLines(`${dir}/home`);
        assert.ok(log.some((l) => /"old loop"/.test(String(l.message))), JSON.stringify(log));
      });
    });
  },
});

async function crashContext(dir: string, sessionId: string): Promise<string> {
  const result = await runLifeline(["hook", "crash"], {
    stdin: JSON.stringify({
      ...await hookInput("hh-text", "SessionStart"),
      session_id: sessionId,
      cwd: `${dir}/project`,
    }),
    env: { HOME: `${dir}/home` },
  });
  assert.equal(result.code, 0);
  return parseHookStdout(result.stdout, "SessionStart")?.hookSpecificOutput.additionalContext ?? "";
}

Deno.test({
  name: "a scavenged session stays scavenged for that death: whatever --stale-after a judge uses",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await deadSession(dir, "gone", 100);
      const first = bySession(await tick(dir, "--stale-after", "60")).gone!;
      assert.equal(first.action, "scavenge");
      assert.match(
        await crashContext(dir, "next-1"),
        /Read sessions\/gone\/handoffs\/scavenged\.md/,
      );

      // A judge with the default 300 s sees the same old heartbeat as "fresh".
      const second = bySession(await tick(dir)).gone!;
      assert.deepEqual([second.state, second.action], ["scavenged", "none"], second.reason);
      const shown = (await statusOf(dir)).find((s) => s.id === "gone")!;
      assert.equal(shown.state, "scavenged", "status never calls it alive");
      const third = bySession(await tick(dir, "--stale-after", "60")).gone!;
      assert.deepEqual([third.state, third.action], ["scavenged", "none"]);
      assert.doesNotMatch(await crashContext(dir, "next-2"), /scavenged\.md/, "offered once");
      const log = await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`);
      assert.equal(log.split("\n").filter((l) => l.includes('"action":"scavenged"')).length, 1);
    });
  },
});

Deno.test({
  name: "a scavenged session whose own heartbeat hook runs again is alive; its next death is new",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const agent = await startAgent(dir, "phoenix", "lifeline hook heartbeat");
      try {
        // Its agent looked dead for a while (say the machine slept and its record was stale).
        const record = await readRecord(dir, "phoenix");
        await Deno.writeTextFile(
          sessionFile(dir, "phoenix", "session.json"),
          JSON.stringify({
            ...record,
            agent_started: "Mon Jan  1 00:00:00 2024",
            agent_start_id: undefined,
          }),
        );
        await backdate(dir, "phoenix", 900);
        assert.equal(bySession(await tick(dir)).phoenix!.action, "scavenge");
        assert.match(await crashContext(dir, "next-1"), /sessions\/phoenix\/handoffs/);
        // Delivered: finished, and marked so (one lstat tells status and the daemon).
        assert.equal(
          await Deno.readTextFile(sessionFile(dir, "phoenix", "finished")),
          "scavenged\n",
        );
        assert.equal((await statusOf(dir)).find((s) => s.id === "phoenix")!.state, "scavenged");

        await agent.again(); // its next tool call
        assert.equal(await Deno.readTextFile(sessionFile(dir, "phoenix", "status")), "alive\n");
        await assert.rejects(
          Deno.lstat(sessionFile(dir, "phoenix", "finished")),
          Deno.errors.NotFound,
        );
        assert.equal((await statusOf(dir)).find((s) => s.id === "phoenix")!.state, "alive");
        const revived = bySession(await tick(dir)).phoenix!;
        assert.deepEqual([revived.state, revived.action], ["alive", "none"]);
        const log = await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`);
        assert.match(log, /"action":"revived"/);

        await agent.stop(); // and now it dies for real
        await backdate(dir, "phoenix", 900);
        const again = bySession(await tick(dir)).phoenix!;
        assert.equal(again.action, "scavenge", again.reason);
        assert.match(again.reason, /its agent process is gone/);
        assert.match(
          await crashContext(dir, "next-2"),
          /sessions\/phoenix\/handoffs/,
          "a new death",
        );
      } finally {
        await agent.stop();
      }
    });
  },
});
