import assert from "node:assert/strict";
import { hookInput } from "./helpers/fixtures.ts";
import { parseHookStdout, runLifeline } from "./helpers/lifeline.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

type Input = Record<string, unknown> & { session_id: string };

const NOW_S = () => Math.floor(Date.now() / 1000);

async function crash(dir: string, input: Input) {
  const result = await runLifeline(["hook", "crash"], {
    stdin: JSON.stringify({ ...input, cwd: `${dir}/project` }),
    env: { HOME: `${dir}/home` },
  });
  assert.equal(result.code, 0);
  assert.equal(result.stderr, "");
  const output = parseHookStdout(result.stdout, String(input.hook_event_name));
  return output?.hookSpecificOutput.additionalContext ?? null;
}

async function write(dir: string, relative: string, text: string, mtime?: Date) {
  const path = `${dir}/project/${relative}`;
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, text);
  if (mtime) await Deno.utime(path, mtime, mtime);
  return path;
}

const json = async (path: string) => JSON.parse(await Deno.readTextFile(path));
const start = () => hookInput("hh-text", "SessionStart") as Promise<Input>;

Deno.test("nothing left behind: no output at all", async () => {
  await withTempDir(async (dir) => {
    assert.equal(await crash(dir, await start()), null);
  });
});

Deno.test("stale loop states are deactivated in every time format, other fields kept", async () => {
  await withTempDir(async (dir) => {
    const old = NOW_S() - 3 * 3600;
    const forms: Record<string, unknown> = {
      seconds: old,
      millis: old * 1000,
      iso: new Date(old * 1000).toISOString(),
      string: String(old),
    };
    for (const [name, lastChecked] of Object.entries(forms)) {
      await write(
        dir,
        `sessions/${name}/ralph.json`,
        JSON.stringify({
          active: true,
          last_checked_at: lastChecked,
          iteration: 12,
          tasks: ["a", "b"],
        }),
      );
    }
    const fresh = { active: true, last_checked_at: NOW_S() - 60, iteration: 3 };
    await write(dir, "sessions/fresh/ralph.json", JSON.stringify(fresh));
    await write(
      dir,
      "sessions/done/ralph.json",
      JSON.stringify({ active: false, last_checked_at: 1 }),
    );

    const context = await crash(dir, await start());
    assert.match(context!, /^\[CRASH RECOVERY\]/);
    for (const [name, lastChecked] of Object.entries(forms)) {
      const state = await json(`${dir}/project/sessions/${name}/ralph.json`);
      assert.equal(state.active, false, name);
      assert.equal(state.deactivation_reason, "stale");
      assert.equal(state.last_checked_at, lastChecked, "kept as it was");
      assert.equal(state.iteration, 12);
      assert.deepEqual(state.tasks, ["a", "b"]);
      assert.ok(state.deactivated_at);
      assert.match(
        context!,
        new RegExp(
          `sessions/${name}/ralph\\.json: the loop was still marked active but last checked 3(\\.0)?h ago`,
        ),
      );
    }
    assert.equal(
      typeof (await json(`${dir}/project/sessions/seconds/ralph.json`)).deactivated_at,
      "number",
    );
    assert.equal(
      typeof (await json(`${dir}/project/sessions/iso/ralph.json`)).deactivated_at,
      "string",
    );
    assert.deepEqual(
      await json(`${dir}/project/sessions/fresh/ralph.json`),
      fresh,
      "fresh: untouched",
    );
    assert.doesNotMatch(context!, /sessions\/(fresh|done)\//);
  });
});

Deno.test("a corrupt loop state is moved aside and reported, never rewritten", async () => {
  await withTempDir(async (dir) => {
    await write(dir, "sessions/broken/ralph.json", '{"active": true, "last_checked');
    const context = await crash(dir, await start());
    assert.match(
      context!,
      /sessions\/broken\/ralph\.json was not valid JSON; moved it to sessions\/broken\/ralph\.json\.corrupt-\S+ and did not rewrite it/,
    );
    const names = await listDir(`${dir}/project/sessions/broken`);
    assert.ok(!names.includes("ralph.json"));
    const moved = names.find((n) => n.startsWith("ralph.json.corrupt-"))!;
    assert.equal(
      await Deno.readTextFile(`${dir}/project/sessions/broken/${moved}`),
      '{"active": true, "last_checked',
    );
  });
});

Deno.test({
  name: "claim locks: old with a dead owner deleted, old with a live owner kept, fresh untouched",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const old = new Date(Date.now() - 20 * 60_000);
      const sleeper = new Deno.Command("sleep", { args: ["60"] }).spawn();
      try {
        const dead = new Deno.Command("true").spawn();
        const deadPid = dead.pid;
        await dead.status;
        await write(dir, ".claims/src_auth.lock", JSON.stringify({ pid: deadPid }), old);
        await write(dir, ".claims/live.lock", `${sleeper.pid}\n`, old);
        await write(dir, ".claims/nobody.lock", "", old);
        await write(dir, ".claims/fresh.lock", JSON.stringify({ pid: deadPid }));
        await write(dir, ".claims/sub/deep.lock", "", old);
        const context = await crash(dir, await start());
        assert.deepEqual(await listDir(`${dir}/project/.claims`), [
          "fresh.lock",
          "live.lock",
          "sub",
        ]);
        assert.deepEqual(await listDir(`${dir}/project/.claims/sub`), []);
        assert.match(
          context!,
          new RegExp(
            `\\.claims/src_auth\\.lock: 20 min old, owner pid ${deadPid} is gone; deleted the stale lock`,
          ),
        );
        assert.match(
          context!,
          new RegExp(
            `\\.claims/live\\.lock is 20 min old, but its owner pid ${sleeper.pid} is still running; kept it`,
          ),
        );
        assert.match(context!, /\.claims\/nobody\.lock: 20 min old, no owner; deleted/);
        assert.doesNotMatch(context!, /fresh\.lock/);
      } finally {
        sleeper.kill();
        await sleeper.status;
      }
    });
  },
});

Deno.test("an interrupted plan: read it before anything else, named with its first heading", async () => {
  await withTempDir(async (dir) => {
    await write(
      dir,
      ".working-state/current-plan.md",
      "Some preamble\n\n## Plan: migrate auth to OIDC\n\n- [x] one\n- [ ] two\n",
    );
    const context = await crash(dir, await start());
    const lines = context!.split("\n");
    assert.equal(
      lines[1],
      "- Read .working-state/current-plan.md before anything else: the last session left an " +
        'interrupted plan ("Plan: migrate auth to OIDC"). Resume it from where it stopped.',
    );
  });
});

Deno.test("a handoff is offered once, even to sessions starting at the same time", async () => {
  await withTempDir(async (dir) => {
    // What the daemon leaves: the handoff, and the status.
    await write(dir, "sessions/dead1/handoffs/scavenged.md", "# Handoff\n");
    await write(dir, "sessions/dead1/status", "scavenged\n");
    const a = { ...await start(), session_id: "new-a" };
    const b = { ...await start(), session_id: "new-b" };
    const [first, second] = await Promise.all([crash(dir, a), crash(dir, b)]);
    const offered = [first, second].filter((c) =>
      c?.includes("sessions/dead1/handoffs/scavenged.md")
    );
    assert.equal(offered.length, 1);
    assert.match(offered[0]!, /Session dead1 died without saving its work/);
    assert.equal(await crash(dir, { ...a, session_id: "new-c" }), null, "not offered again");
    const marker = await json(`${dir}/project/sessions/dead1/handoffs/scavenged.md.offered`);
    assert.ok(["new-a", "new-b"].includes(marker.to));
  });
});

Deno.test("under UserPromptSubmit it acts once per session; under SessionStart on every source", async () => {
  await withTempDir(async (dir) => {
    await write(dir, ".working-state/current-plan.md", "# The plan\n");
    const prompt = await hookInput("hh-text", "UserPromptSubmit") as Input;
    assert.match((await crash(dir, prompt))!, /current-plan\.md/);
    assert.equal(await crash(dir, prompt), null, "the second prompt adds nothing");
    const other = { ...prompt, session_id: "another" };
    assert.match((await crash(dir, other))!, /current-plan\.md/);
    for (const source of ["startup", "resume", "clear", "compact"]) {
      const context = await crash(dir, { ...await start(), source });
      assert.match(context!, /current-plan\.md/, source);
    }
    const stop = await hookInput("hh-text", "Stop") as Input;
    assert.equal(await crash(dir, stop), null, "other events: nothing");
  });
});

Deno.test("pending outbox advice is delivered with the block and cleared", async () => {
  await withTempDir(async (dir) => {
    const input = await start();
    await write(
      dir,
      `sessions/${input.session_id}/outbox.jsonl`,
      JSON.stringify({
        ts: "2026-11-30T00:00:00Z",
        source: "test",
        text: "[TOOL FALLBACK] use Read",
      }) + "\n",
    );
    const context = await crash(dir, input);
    assert.equal(
      context,
      "[CRASH RECOVERY] Earlier sessions left state behind; lifeline found and did this:\n- [TOOL FALLBACK] use Read",
    );
    assert.equal(await crash(dir, input), null);
  });
});

Deno.test("SessionStart's model is recorded for model fallback", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("screen-429", "SessionStart") as Input;
    await crash(dir, input);
    const tracker = await json(`${dir}/project/sessions/${input.session_id}/failure-tracker.json`);
    assert.equal(tracker.current_model, "claude-opus-5-5");
  });
});

Deno.test("every action is logged as JSONL with ts, session, kind, action, target, result", async () => {
  await withTempDir(async (dir) => {
    await write(
      dir,
      "sessions/s1/ralph.json",
      JSON.stringify({ active: true, last_checked_at: 1 }),
    );
    await write(dir, ".claims/x.lock", "", new Date(Date.now() - 3600_000));
    await write(dir, ".working-state/current-plan.md", "# P\n");
    const input = await start();
    await crash(dir, input);
    const log = (await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`)).trim().split(
      "\n",
    )
      .map((line) => JSON.parse(line));
    assert.deepEqual(log.map((r) => [r.kind, r.action, r.target]), [
      ["plan", "found", ".working-state/current-plan.md"],
      ["loop_state", "deactivated", "sessions/s1/ralph.json"],
      ["claim", "deleted", ".claims/x.lock"],
    ]);
    for (const record of log) {
      assert.deepEqual(Object.keys(record).sort(), [
        "action",
        "kind",
        "result",
        "session",
        "target",
        "ts",
      ]);
      assert.equal(record.session, input.session_id);
    }
  });
});
