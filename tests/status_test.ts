import assert from "node:assert/strict";
import { REPO_DIR, runLifeline, spawnLifeline } from "./helpers/lifeline.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { registerSession } from "./helpers/sessions.ts";
import { registerRoot } from "../lib/state/roots.ts";

const IGNORE = Deno.build.os === "windows";
const TREE = `${REPO_DIR}/tests/fixtures/lifeline/status-tree`;

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) await copyTree(`${from}/${entry.name}`, `${to}/${entry.name}`);
    else await Deno.copyFile(`${from}/${entry.name}`, `${to}/${entry.name}`);
  }
}

/** How old each fixture session's heartbeat is made, in seconds. */
const HEARTBEAT_AGES: Record<string, number> = {
  crashed: 3 * 3600,
  orphan: 4 * 3600,
  rescued: 5 * 3600,
  working: 30,
};

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("true").spawn();
  await child.status;
  return child.pid;
}

/**
 * The fixture tree in `dir`, made current: heartbeats `secondsAgo` old, and the `crashed`
 * session's agent a process that is gone.
 */
async function stateTree(dir: string, now: number): Promise<void> {
  await copyTree(TREE, dir);
  for (const [id, secondsAgo] of Object.entries(HEARTBEAT_AGES)) {
    // `orphan` has nothing but its heartbeat, and git keeps no empty directory.
    await Deno.mkdir(`${dir}/project/sessions/${id}`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/project/sessions/${id}/heartbeat`,
      `${Math.floor(now / 1000) - secondsAgo}\n`,
    );
  }
  const crashed = `${dir}/project/sessions/crashed/session.json`;
  const record = JSON.parse(await Deno.readTextFile(crashed));
  await Deno.writeTextFile(crashed, JSON.stringify({ ...record, agent_pid: await deadPid() }));
}

/** Ages move while the command runs: each must lie within a few seconds after the one written. */
function assertAgeNear(actual: unknown, expected: number) {
  assert.equal(typeof actual, "number");
  assert.ok(
    (actual as number) >= expected && (actual as number) <= expected + 10,
    `age ${actual}, expected ${expected}`,
  );
}

Deno.test({
  name: "status --json: reports a fixture state tree in full",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await stateTree(dir, Date.now());
      const env = { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` };
      const result = await runLifeline(["status", "--json", "--root", `${dir}/project`], { env });
      assert.equal(result.code, 0, result.stderr);
      const status = JSON.parse(result.stdout);

      for (const session of status.sessions) {
        assertAgeNear(session.heartbeat_age, HEARTBEAT_AGES[session.id]!);
        session.heartbeat_age = "checked";
        session.reason = session.reason.replace(/\d+s/, "<age>");
      }

      assert.deepEqual(status, {
        root: `${dir}/project`,
        kill_switch: { state: "off", path: `${dir}/home/.claude/self-heal.off` },
        sessions: [
          {
            id: "crashed",
            heartbeat_age: "checked",
            state: "dead",
            pane: null,
            reason: "no heartbeat for <age> and its agent process is gone",
          },
          {
            id: "orphan",
            heartbeat_age: "checked",
            state: "unknown",
            pane: null,
            reason: "no heartbeat for <age>, and neither its pane nor its process can be checked",
          },
          {
            id: "rescued",
            heartbeat_age: "checked",
            state: "scavenged",
            pane: null,
            reason: "its handoff is in handoffs/scavenged.md",
          },
          {
            id: "working",
            heartbeat_age: "checked",
            state: "alive",
            pane: "%3",
            reason: "heartbeat <age> ago",
          },
        ],
        watched_panes: [
          {
            server: "/tmp/tmux-1000/agents",
            pane: "%3",
            session: "agents",
            state: "usage_limit",
            signal: "both",
            limited_until: "2026-11-30T12:00:00.000Z",
            resume_at: "2026-11-30T12:01:00.000Z",
            attempts: 0,
            resumed: false,
            gave_up: false,
            paused: false,
            refusal: null,
          },
          {
            server: "/tmp/tmux-1000/agents",
            pane: "%5",
            session: "agents",
            state: "dangerous_prompt",
            signal: "screen",
            limited_until: null,
            resume_at: null,
            attempts: 0,
            resumed: false,
            gave_up: false,
            paused: false,
            refusal: "a permission question on screen: never typed into",
          },
          {
            server: "/tmp/tmux-1000/agents",
            pane: "%7",
            session: "agents",
            state: "usage_limit",
            signal: "screen",
            limited_until: "2026-11-30T11:00:00.000Z",
            resume_at: "2026-11-30T11:01:00.000Z",
            attempts: 0,
            resumed: false,
            gave_up: false,
            paused: false,
            refusal: 'the input box holds text ("git push -f"): never typed into',
          },
        ],
        breakers: [{ task: "build-7", triggered_at: "2026-11-30T07:15:00.000Z", error_count: 3 }],
        iterations: null,
        tools_over_threshold: [{ session: "working", tool: "Bash", failures: 3 }],
        outbox: [{
          session: "working",
          advice: ["The last 3 turns failed with overloaded_error. Consider /model opus."],
        }],
        watchers: [],
        daemons: [],
        other_projects: [],
      });
    });
  },
});

Deno.test({
  name: "status: the table shows every section, and reading it changes nothing",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await stateTree(dir, Date.now());
      const before = await snapshot(dir);
      const env = { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` };
      const result = await runLifeline(["status"], { env, cwd: `${dir}/project` });
      assert.equal(result.code, 0, result.stderr);
      const lines = result.stdout.split("\n");
      assert.equal(lines[0], `lifeline status for ${dir}/project`);
      assert.match(result.stdout, /^self-heal: off /m);
      assert.match(result.stdout, /^ {2}working {2,}3\ds {2,}alive {2,}%3$/m);
      assert.match(result.stdout, /^ {2}crashed {2,}3h {2,}dead {2,}-$/m);
      assert.match(result.stdout, /^ {2}rescued {2,}5h {2,}scavenged {2,}-$/m);
      assert.match(result.stdout, /^sessions:$/m);
      assert.match(
        result.stdout,
        /^ {2}\/tmp\/tmux-1000\/agents +%5 +dangerous_prompt +- +0 +a permission question on screen/m,
      );
      assert.match(result.stdout, /^open breakers: build-7 \(3 failures\)$/m);
      assert.match(result.stdout, /^tools at the fallback threshold: Bash x3 \(working\)$/m);
      assert.match(result.stdout, /^ {2}working: The last 3 turns failed/m);
      assert.deepEqual(await snapshot(dir), before);
    });
  },
});

Deno.test({
  name: "status: an empty project says none everywhere",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = { HOME: dir, LIFELINE_STATE_DIR: `${dir}/state` };
      const result = await runLifeline(["status", "--json"], { env, cwd: dir });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), {
        root: dir,
        kill_switch: { state: "on", path: `${dir}/.claude/self-heal.off` },
        sessions: [],
        watched_panes: [],
        breakers: [],
        iterations: null,
        tools_over_threshold: [],
        outbox: [],
        watchers: [],
        daemons: [],
        other_projects: [],
      });
      assert.deepEqual(await listDir(dir), [], "status wrote nothing");
    });
  },
});

Deno.test({
  name: "status without --root: every registered project, and whether the watcher and daemon run",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` };
      const [here, other] = [`${dir}/here`, `${dir}/other`];
      await registerSession(here, "s-here", { heartbeatAgo: 5, agentPid: Deno.pid });
      await registerSession(other, "s-other", { heartbeatAgo: 5, agentPid: Deno.pid });
      await Deno.mkdir(`${other}/.EnjoyHarness`);
      await Deno.writeTextFile(
        `${other}/.EnjoyHarness/.circuit-breaker-task-T9`,
        "error_count: 3\n",
      );
      for (const root of [here, other]) await registerRoot(env, root, { now: Date.now() });
      // A daemon for every registered project runs, holding its lock; no watcher does.
      const daemon = spawnLifeline(["daemon", "stale", "--interval", "3600"], { env, cwd: dir });
      try {
        await waitFor(() => Deno.stat(`${dir}/state/daemon/registered.pid`));
        const text = await runInProcess(["status"], { cwd: here, env });
        assert.equal(text.code, 0, text.stderr);
        const lines = text.stdout.split("\n");
        assert.equal(lines[0], `lifeline status for ${here}`);
        assert.ok(lines.includes("watcher: not running (start it: `lifeline watch tmux`)"));
        assert.ok(lines.includes(`daemon: running (pid ${daemon.pid}: every registered project)`));
        const others = lines.indexOf("other registered projects:");
        assert.ok(others > 0, text.stdout);
        assert.deepEqual(lines.slice(others, others + 4).map((l) => l.replace(/ +/g, " ")), [
          "other registered projects:",
          ` ${other}`,
          " sessions:",
          " id heartbeat state pane",
        ]);
        assert.match(lines[others + 4]!, /^ {6}s-other +\ds +alive +-$/);
        assert.ok(lines.includes("    open breakers: T9 (3 failures)"));

        const json = JSON.parse(
          (await runInProcess(["status", "--json"], { cwd: here, env })).stdout,
        );
        assert.equal(json.root, here);
        assert.deepEqual(json.daemons, [{ name: "registered", pid: daemon.pid }]);
        assert.deepEqual(json.watchers, []);
        assert.deepEqual(json.other_projects.map((p: { root: string }) => p.root), [other]);
        assert.deepEqual(json.other_projects[0].sessions.map((x: { id: string }) => x.id), [
          "s-other",
        ]);

        // --root narrows it to that project.
        const narrowed = await runInProcess(["status", "--json", "--root", other], {
          cwd: here,
          env,
        });
        const only = JSON.parse(narrowed.stdout);
        assert.equal(only.root, other);
        assert.deepEqual(only.sessions.map((x: { id: string }) => x.id), ["s-other"]);
        assert.deepEqual(only.other_projects, []);
      } finally {
        daemon.kill("SIGTERM");
        await daemon.status;
        await daemon.stdout.cancel();
        await daemon.stderr.cancel();
      }
      // A project that is gone is not shown, and left in the registry: status only reports.
      await Deno.mkdir(`${dir}/gone`);
      await registerRoot(env, `${dir}/gone`, { now: Date.now() });
      await Deno.remove(`${dir}/gone`);
      const json = JSON.parse(
        (await runInProcess(["status", "--json"], { cwd: here, env })).stdout,
      );
      assert.deepEqual(json.other_projects.map((p: { root: string }) => p.root), [other]);
      assert.equal((await listDir(`${dir}/state/roots`)).length, 3);
    });
  },
});

async function waitFor(probe: () => Promise<unknown>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await probe();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Every file under `dir` with its content. */
async function snapshot(dir: string, prefix = ""): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory) Object.assign(files, await snapshot(dir, `${path}/`));
    else files[path] = await Deno.readTextFile(`${dir}/${path}`);
  }
  return files;
}

Deno.test({
  name:
    "status prints no control character from state: escape sequences in a pane or in advice are none",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      // Each sets the terminal's title, clears the screen, rings the bell, or starts a new line.
      const hostile = "\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\n";
      const session = await registerSession(`${dir}/project`, "s1", {
        heartbeatAgo: 5,
        agentPid: Deno.pid,
        record: { tmux_pane: `%1${hostile}`, tmux_socket: "/tmp/x" },
      });
      const advice = {
        ts: new Date().toISOString(),
        source: "hook track",
        text: `Retry${hostile}`,
      };
      await Deno.writeTextFile(`${session}/outbox.jsonl`, JSON.stringify(advice) + "\n");
      const result = await runLifeline(["status", "--root", `${dir}/project`], {
        env: { HOME: `${dir}/home` },
      });
      assert.equal(result.code, 0, result.stderr);
      assert.doesNotMatch(result.stdout.replaceAll("\n", ""), /[\p{Cc}\u202e]/u);
      assert.match(result.stdout, /\n {2}s1 +\S+ +alive +-\n/);
      assert.match(result.stdout, /^ {2}s1: Retry\?\]0;pwned\?\?\[2J\?31m\?\?$/m);
    });
  },
});
