import assert from "node:assert/strict";
import { hookInput } from "./helpers/fixtures.ts";
import { ownLogLines, runLifeline } from "./helpers/lifeline.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";
import { startHookAgent } from "./helpers/hook_agent_process.ts";
import { registeredPanes } from "../lib/watch/records.ts";
import { registeredRoots } from "../lib/state/roots.ts";
import { withLock } from "../lib/state/store.ts";

async function heartbeat(dir: string, input: Record<string, unknown>, env = {}) {
  await Deno.mkdir(`${dir}/project`, { recursive: true });
  return await runLifeline(["hook", "heartbeat"], {
    stdin: JSON.stringify({ ...input, cwd: `${dir}/project` }),
    env: { HOME: `${dir}/home`, ...env },
  });
}

Deno.test("hook heartbeat writes epoch seconds and the session registry, and prints nothing", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    const before = Math.floor(Date.now() / 1000);
    const result = await heartbeat(dir, input, {
      TMUX_PANE: "%7",
      TMUX: "/tmp/tmux-1000/work,4242,0",
    });
    const after = Math.ceil(Date.now() / 1000);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, "");
    const sessionDir = `${dir}/project/sessions/${input.session_id}`;
    const beat = await Deno.readTextFile(`${sessionDir}/heartbeat`);
    assert.match(beat, /^\d+\n$/);
    assert.ok(Number(beat) >= before && Number(beat) <= after);

    const record = JSON.parse(await Deno.readTextFile(`${sessionDir}/session.json`));
    assert.equal(record.session_id, input.session_id);
    assert.equal(record.root, `${dir}/project`);
    assert.equal(record.cwd, `${dir}/project`);
    assert.equal(record.transcript_path, input.transcript_path);
    assert.equal(record.tmux_pane, "%7");
    assert.equal(record.tmux_socket, "/tmp/tmux-1000/work");
    // Where a revive opens its window: the pane's tmux session, on this very server.
    assert.equal(record.tmux_session, "$0");
    assert.equal(record.tmux_server_pid, 4242);
    assert.equal(record.last_event, "PostToolUse");
    assert.equal(record.first_seen, record.last_seen);
    assert.equal(typeof record.agent_pid, "number");
    if (Deno.build.os !== "windows") {
      // This test process runs the hook, so it is the agent.
      assert.equal(record.agent_pid, Deno.pid);
      assert.equal(record.agent_command, "deno");
      // A number (epoch ms), the same whatever the time zone: this process started before it.
      assert.equal(typeof record.agent_started, "number");
      assert.ok(record.agent_started <= Date.now() - performance.now() + 1000);
    }
  });
});

Deno.test("a later heartbeat keeps first_seen and updates the rest", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    await heartbeat(dir, input);
    const path = `${dir}/project/sessions/${input.session_id}/session.json`;
    const first = JSON.parse(await Deno.readTextFile(path));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await heartbeat(dir, { ...input, hook_event_name: "PostToolUseFailure", error: "x" });
    const second = JSON.parse(await Deno.readTextFile(path));
    assert.equal(second.first_seen, first.first_seen);
    assert.ok(second.last_seen > first.last_seen);
    assert.equal(second.last_event, "PostToolUseFailure");
    assert.equal(second.tmux_pane, null);
  });
});

Deno.test("50 concurrent heartbeats of one session leave parseable files", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    const results = await Promise.all(Array.from({ length: 50 }, () => heartbeat(dir, input)));
    for (const result of results) {
      assert.equal(result.code, 0);
      assert.equal(result.stdout, "");
    }
    const sessionDir = `${dir}/project/sessions/${input.session_id}`;
    assert.match(await Deno.readTextFile(`${sessionDir}/heartbeat`), /^\d+\n$/);
    const record = JSON.parse(await Deno.readTextFile(`${sessionDir}/session.json`));
    assert.equal(record.session_id, input.session_id);
    const names = await listDir(sessionDir);
    assert.deepEqual(
      names,
      ["heartbeat", "session.json", "session.json.lock"],
      "no temp file left",
    );
    // Heartbeats that found session.json busy skipped it (background hooks never wait) and said so.
    for (const line of await ownLogLines(`${dir}/home`)) {
      assert.match(String(line.message), /session\.json is busy/);
    }
  });
});

Deno.test("a path-traversal session id writes nothing anywhere, exits 0 and logs", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    for (const id of ["../../escaped", "a/b", "", ".."]) {
      const result = await heartbeat(dir, { ...input, session_id: id });
      assert.equal(result.code, 0);
      assert.equal(result.stdout, "");
    }
    assert.deepEqual(
      await listDir(dir),
      ["home", "project"],
      "only lifeline's own log was written",
    );
    assert.deepEqual(await listDir(`${dir}/project`), []);
    const log = await ownLogLines(`${dir}/home`);
    assert.equal(log.length, 4);
    assert.match(String(log[0]!.message), /Invalid session id "..\/..\/escaped"/);
  });
});

Deno.test("on SessionEnd the session is ended (and marked finished); its next tool call brings it back", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    const sessionDir = `${dir}/project/sessions/${input.session_id}`;
    await heartbeat(dir, input);
    await heartbeat(dir, { ...input, hook_event_name: "SessionEnd", reason: "prompt_input_exit" });
    assert.equal(await Deno.readTextFile(`${sessionDir}/status`), "ended\n");
    assert.equal(await Deno.readTextFile(`${sessionDir}/finished`), "ended\n");
    // The daemon leaves an ended session alone, however old its heartbeat.
    await Deno.writeTextFile(`${sessionDir}/heartbeat`, `${Math.floor(Date.now() / 1000) - 900}\n`);
    const tick = await runLifeline(
      ["daemon", "stale", "--once", "--json", "--root", `${dir}/project`],
      { env: { HOME: `${dir}/home` } },
    );
    const line = JSON.parse(tick.stdout.trim().split("\n").at(-1)!); // after the start line
    assert.deepEqual([line.state, line.action], ["ended", "none"]);

    await heartbeat(dir, input); // resumed
    assert.equal(await Deno.readTextFile(`${sessionDir}/status`), "alive\n");
    await assert.rejects(Deno.lstat(`${sessionDir}/finished`), Deno.errors.NotFound);
  });
});

Deno.test({
  name: "the hot path: no ps spawned per call, session.json left alone when nothing changed",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await withTempDir(async (dir) => {
      // A ps that says it ran, then does what ps does.
      const realPs = new TextDecoder().decode(
        (await new Deno.Command("sh", { args: ["-c", "command -v ps"] }).output()).stdout,
      ).trim();
      await Deno.mkdir(`${dir}/bin`, { recursive: true });
      await Deno.writeTextFile(
        `${dir}/bin/ps`,
        `#!/bin/sh\necho "$@" >> '${dir}/ps.calls'\nexec '${realPs}' "$@"\n`,
        { mode: 0o755 },
      );
      const input = await hookInput("hh-tool-ok", "PostToolUse");
      // Through `sh -c`, as the client runs hooks: every call has a new parent.
      const agent = await startHookAgent(
        dir,
        JSON.stringify({ ...input, cwd: `${dir}/project` }),
        { HOME: `${dir}/home` },
      );
      try {
        const path = `${dir}/project/sessions/${input.session_id}/session.json`;
        const first = await Deno.stat(path);
        await agent.again();
        await agent.again();
        const record = JSON.parse(await Deno.readTextFile(path));
        assert.equal(record.agent_pid, agent.pid);
        assert.equal(
          await Deno.readTextFile(`${dir}/ps.calls`).catch(() => ""),
          "",
          "ps was spawned",
        );
        const later = await Deno.stat(path);
        assert.equal(later.ino, first.ino, "session.json was not rewritten");
      } finally {
        await agent.stop();
      }
    });
  },
});

Deno.test({
  name: "a shell per call: the agent known is reused, neither looked up again nor the config read",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await withTempDir(async (dir) => {
      // An invalid user config is logged each time it is read: the log counts the reads.
      await Deno.mkdir(`${dir}/home/.config/lifeline`, { recursive: true });
      await Deno.writeTextFile(`${dir}/home/.config/lifeline/config.json`, "{not json");
      const input = await hookInput("hh-tool-ok", "PostToolUse");
      const agent = await startHookAgent(
        dir,
        JSON.stringify({ ...input, cwd: `${dir}/project` }),
        { HOME: `${dir}/home` },
      );
      try {
        const reads = async () =>
          (await ownLogLines(`${dir}/home`)).filter((l) => /invalid config/.test(String(l.message)))
            .length;
        const first = await reads(); // the first call looked the agent up, with the config
        await agent.again();
        await agent.again();
        assert.equal(await reads(), first, "the config was read again");
        const record = JSON.parse(
          await Deno.readTextFile(`${dir}/project/sessions/${input.session_id}/session.json`),
        );
        assert.equal(record.agent_pid, agent.pid);
      } finally {
        await agent.stop();
      }
    });
  },
});

Deno.test("the registry says which tmux pane of which server each session runs in", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    const pane = (id: string, tmuxPane: string, socket: string) =>
      heartbeat(dir, { ...input, session_id: id }, { TMUX_PANE: tmuxPane, TMUX: `${socket},1,0` });
    await pane("on-a", "%3", "/tmp/tmux-1000/a");
    await pane("on-b", "%3", "/tmp/tmux-1000/b");
    await pane("other", "%4", "/tmp/tmux-1000/a");
    await Deno.mkdir(`${dir}/project/sessions/not a session`);
    const panes = await registeredPanes([`${dir}/project`]);
    assert.deepEqual(
      panes.map((
        { root, record },
      ) => [root, record.session_id, record.tmux_socket, record.tmux_pane]),
      [
        [`${dir}/project`, "on-a", "/tmp/tmux-1000/a", "%3"],
        [`${dir}/project`, "on-b", "/tmp/tmux-1000/b", "%3"],
        [`${dir}/project`, "other", "/tmp/tmux-1000/a", "%4"],
      ],
    );
  });
});

Deno.test("the first heartbeat in a project records its root for the daemon and status, once", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    // A state directory that does not exist yet: the user's first project.
    const env = { LIFELINE_STATE_DIR: `${dir}/state` };
    assert.equal((await heartbeat(dir, input, env)).code, 0);
    assert.deepEqual(await registeredRoots(env), [`${dir}/project`]);
    const [entry] = await listDir(`${dir}/state/roots`);
    const before = await Deno.stat(`${dir}/state/roots/${entry}`);
    await heartbeat(dir, { ...input, session_id: "another" }, env);
    assert.deepEqual(await listDir(`${dir}/state/roots`), [entry]);
    const after = await Deno.stat(`${dir}/state/roots/${entry}`);
    assert.equal(after.ino, before.ino, "a known root is not written again");
  });
});

Deno.test("a SessionEnd records why the session ended, even when its registry is busy", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-tool-ok", "PostToolUse");
    const project = `${dir}/project`;
    await heartbeat(dir, input);
    const sessionDir = `${project}/sessions/${input.session_id}`;
    // Another heartbeat holds session.json: this one skips the registry, but not the reason.
    const ended = await withLock(
      `${sessionDir}/session.json`,
      () =>
        heartbeat(dir, { ...input, hook_event_name: "SessionEnd", reason: "prompt_input_exit" }),
      { root: project, waitMs: 1000 },
    );
    assert.equal(ended.code, 0);
    assert.equal(await Deno.readTextFile(`${sessionDir}/status`).catch(() => ""), "");
    const end = JSON.parse(await Deno.readTextFile(`${sessionDir}/end.json`));
    assert.equal(end.reason, "prompt_input_exit");
    assert.ok(Math.abs(end.at - Date.now()) < 60_000);
  });
});

Deno.test("every field session.json keeps is bounded: a 17 MB cwd is not kept, nothing is moved aside", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/project`, { recursive: true });
    // With CLAUDE_PROJECT_DIR set (as the client sets it), the root does not come from the cwd.
    const input = JSON.stringify({
      ...await hookInput("hh-tool-ok", "PostToolUse"),
      session_id: "s1",
      cwd: "/x" + "A".repeat(17 << 20),
      transcript_path: "/t" + "B".repeat(5000),
    });
    for (let i = 0; i < 3; i++) {
      const result = await runLifeline(["hook", "heartbeat"], {
        stdin: input,
        env: { HOME: `${dir}/home`, CLAUDE_PROJECT_DIR: `${dir}/project` },
      });
      assert.equal(result.code, 0);
    }
    const sessionDir = `${dir}/project/sessions/s1`;
    assert.deepEqual((await listDir(sessionDir)).filter((n) => n.includes("corrupt")), []);
    const text = await Deno.readTextFile(`${sessionDir}/session.json`);
    assert.ok(text.length < 4096, `session.json is ${text.length} bytes`);
    const record = JSON.parse(text);
    assert.equal(record.cwd, null);
    assert.equal(record.transcript_path, null);
  });
});
