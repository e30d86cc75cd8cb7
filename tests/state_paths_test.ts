// State stays inside the project, in plain files (issue 13, items 3 and 4): below the root, a path
// that is or passes through a symbolic link is refused (hooks fail open with one log line,
// commands exit 1 saying so); files that are not regular (a FIFO, a device) are never opened, so
// nothing blocks; the root itself may be reached through links, and is never created.
import assert from "node:assert/strict";
import { hookInput } from "./helpers/fixtures.ts";
import { ownLogLines, parseHookStdout, runLifeline } from "./helpers/lifeline.ts";
import { registerSession } from "./helpers/sessions.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";
import {
  appendJsonLine,
  numberCodec,
  readState,
  RefusedPathError,
  updateState,
  withLock,
  writeFileAtomic,
} from "../lib/state/store.ts";

const IGNORE = Deno.build.os === "windows";

/** A project under `dir` and a directory outside it, with `outside/secret.txt`. */
async function layout(dir: string): Promise<{ project: string; outside: string }> {
  const project = `${dir}/project`;
  const outside = `${dir}/outside`;
  await Deno.mkdir(project, { recursive: true });
  await Deno.mkdir(outside, { recursive: true });
  await Deno.writeTextFile(`${outside}/secret.txt`, "outside text\n");
  return { project, outside };
}

/** Runs a hook with `input` in `project`; asserts the fail-open contract. */
async function hook(dir: string, name: string, input: Record<string, unknown>, timeoutMs = 15_000) {
  const result = await runLifeline(["hook", name], {
    stdin: JSON.stringify({ ...input, cwd: `${dir}/project` }),
    env: { HOME: `${dir}/home` },
    timeoutMs,
  });
  assert.equal(result.code, 0);
  assert.equal(result.stderr, "");
  return result;
}

async function mkfifo(path: string): Promise<void> {
  const made = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.ok(made.success, "mkfifo");
}

Deno.test({
  name: "store: a link below the root is refused for every kind of access; the root may be one",
  ignore: IGNORE,
  async fn(t) {
    await withTempDir(async (dir) => {
      const { project, outside } = await layout(dir);
      await Deno.symlink(outside, `${project}/sessions`);
      await Deno.symlink(`${outside}/secret.txt`, `${project}/file.txt`);
      const root = project;
      const refused = (what: string, fn: () => Promise<unknown>) =>
        t.step(what, () => assert.rejects(fn, RefusedPathError));
      await refused(
        "an atomic write through a linked directory",
        () => writeFileAtomic(`${project}/sessions/s1/heartbeat`, "1\n", { root }),
      );
      await refused(
        "an append to a linked file",
        () => appendJsonLine(`${project}/file.txt`, { x: 1 }, { root }),
      );
      await refused(
        "a read of a linked file",
        () => readState(`${project}/file.txt`, numberCodec, { root }),
      );
      await refused(
        "a locked update through a linked directory",
        () =>
          updateState(`${project}/sessions/s1/n`, numberCodec, () => 1, {
            root,
            waitMs: 0,
            now: 0,
          }),
      );
      await refused(
        "an atomic write over a link",
        () => writeFileAtomic(`${project}/file.txt`, "replaced\n", { root }),
      );
      assert.equal(await Deno.readTextFile(`${outside}/secret.txt`), "outside text\n");
      assert.deepEqual(await listDir(outside), ["secret.txt"]);

      await t.step("the root itself may be reached through a link", async () => {
        await Deno.mkdir(`${dir}/real`);
        await Deno.symlink(`${dir}/real`, `${dir}/alias`);
        await writeFileAtomic(`${dir}/alias/sessions/s1/heartbeat`, "1\n", {
          root: `${dir}/alias`,
        });
        assert.equal(await Deno.readTextFile(`${dir}/real/sessions/s1/heartbeat`), "1\n");
      });
      await t.step("a root that does not exist is not created", async () => {
        await assert.rejects(
          writeFileAtomic(`${dir}/missing/sessions/s1/heartbeat`, "1\n", {
            root: `${dir}/missing`,
          }),
          RefusedPathError,
        );
        assert.deepEqual((await listDir(dir)).includes("missing"), false);
      });
    });
  },
});

Deno.test({
  name: "store: a FIFO state file is refused at once, never opened (the open would block)",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await mkfifo(`${dir}/n.txt`);
      const started = Date.now();
      await assert.rejects(readState(`${dir}/n.txt`, numberCodec, { root: dir }), RefusedPathError);
      await assert.rejects(appendJsonLine(`${dir}/n.txt`, {}, { root: dir }), RefusedPathError);
      assert.ok(Date.now() - started < 1000);
    });
  },
});

Deno.test({
  name: "store: a dangling <file>.lock link is moved aside, so the next update works",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await Deno.symlink(`${dir}/gone/elsewhere.lock`, `${dir}/n.txt.lock`);
      const result = await updateState(`${dir}/n.txt`, numberCodec, () => 5, {
        root: dir,
        waitMs: 0,
        now: 0,
      });
      assert.equal(result.value, 5);
      assert.ok((await Deno.lstat(`${dir}/n.txt.lock`)).isFile, "a real lock file now");
      assert.equal(
        await withLock(`${dir}/n.txt`, () => Promise.resolve("again"), {
          root: dir,
          waitMs: 0,
        }),
        "again",
      );
      await assert.rejects(
        Deno.lstat(`${dir}/gone`),
        Deno.errors.NotFound,
        "nothing created there",
      );
    });
  },
});

Deno.test({
  name: "hook crash: a linked .claims is refused; the lock file outside is not deleted",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { project, outside } = await layout(dir);
      const old = new Date(Date.now() - 3600_000);
      await Deno.writeTextFile(`${outside}/build.lock`, "");
      await Deno.utime(`${outside}/build.lock`, old, old);
      await Deno.symlink(outside, `${project}/.claims`);
      await hook(dir, "crash", await hookInput("hh-text", "SessionStart"));
      assert.deepEqual(await listDir(outside), ["build.lock", "secret.txt"]);
      const log = await ownLogLines(`${dir}/home`);
      assert.equal(log.length, 1);
      assert.match(
        String(log[0]!.message),
        /Refusing ".*\/project\/\.claims": it is a symbolic link/,
      );
    });
  },
});

Deno.test({
  name: "hook track: a linked logs/error-recovery.log is not appended to",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { project, outside } = await layout(dir);
      await Deno.mkdir(`${project}/logs`);
      await Deno.symlink(`${outside}/secret.txt`, `${project}/logs/error-recovery.log`);
      const fail = await hookInput("hh-tool-fail", "PostToolUseFailure");
      for (let i = 0; i < 2; i++) await hook(dir, "track", fail); // the second earns advice, logged
      assert.equal(await Deno.readTextFile(`${outside}/secret.txt`), "outside text\n");
      assert.equal((await ownLogLines(`${dir}/home`)).length, 1);
    });
  },
});

Deno.test({
  name: "hook heartbeat: a linked sessions/<id> gets no heartbeat",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { project, outside } = await layout(dir);
      const input = await hookInput("hh-tool-ok", "PostToolUse");
      await Deno.mkdir(`${project}/sessions`);
      await Deno.symlink(outside, `${project}/sessions/${input.session_id}`);
      const result = await hook(dir, "heartbeat", input);
      assert.equal(result.stdout, "");
      assert.deepEqual(await listDir(outside), ["secret.txt"]);
      assert.equal((await ownLogLines(`${dir}/home`)).length, 1);
    });
  },
});

Deno.test({
  name: "hook remind: a linked outbox.jsonl does not bring the outside file's text to the model",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { project, outside } = await layout(dir);
      const input = await hookInput("hh-text", "UserPromptSubmit");
      const advice = JSON.stringify({ ts: "t", source: "x", text: "SECRET FROM OUTSIDE" });
      await Deno.writeTextFile(`${outside}/secret.txt`, advice + "\n");
      await Deno.mkdir(`${project}/sessions/${input.session_id}`, { recursive: true });
      await Deno.symlink(
        `${outside}/secret.txt`,
        `${project}/sessions/${input.session_id}/outbox.jsonl`,
      );
      const result = await hook(dir, "remind", input);
      const context = parseHookStdout(result.stdout, "UserPromptSubmit")!.hookSpecificOutput;
      assert.doesNotMatch(context.additionalContext, /SECRET FROM OUTSIDE/);
      assert.match(context.additionalContext, /^\[SELF-HEAL\]/, "the reminder still goes out");
      assert.equal(await Deno.readTextFile(`${outside}/secret.txt`), advice + "\n", "not removed");
    });
  },
});

Deno.test({
  name: "hook track: a dangling <file>.lock link no longer makes every call fail",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { project } = await layout(dir);
      const fail = await hookInput("hh-tool-fail", "PostToolUseFailure");
      const sessionDir = `${project}/sessions/${fail.session_id}`;
      await Deno.mkdir(sessionDir, { recursive: true });
      await Deno.symlink(
        `${dir}/no/such/dir/x.lock`,
        `${sessionDir}/fail-count-${fail.tool_name}.txt.lock`,
      );
      await hook(dir, "track", fail);
      const second = await hook(dir, "track", fail);
      assert.match(
        parseHookStdout(second.stdout, "PostToolUseFailure")!.hookSpecificOutput.additionalContext,
        /\[TOOL FALLBACK\] .* failed 2 times in a row/,
      );
      assert.deepEqual(await ownLogLines(`${dir}/home`), []);
      await assert.rejects(Deno.lstat(`${dir}/no`), Deno.errors.NotFound);
    });
  },
});

Deno.test("hook crash does not create a cwd that does not exist", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-text", "SessionStart");
    const result = await runLifeline(["hook", "crash"], {
      stdin: JSON.stringify({ ...input, cwd: `${dir}/no/such/project` }),
      env: { HOME: `${dir}/home` },
    });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, "");
    await assert.rejects(Deno.lstat(`${dir}/no`), Deno.errors.NotFound);
    const log = await ownLogLines(`${dir}/home`);
    assert.equal(log.length, 1);
    assert.match(String(log[0]!.message), /the project root does not exist/);
  });
});

Deno.test({
  name:
    "fail handle: a linked .trace/ERROR_TRACE.md is refused with a clear error, not appended to",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { project, outside } = await layout(dir);
      const env = { HOME: `${dir}/home` };
      assert.equal((await runLifeline(["fail", "init", "--root", project], { env })).code, 0);
      await Deno.remove(`${project}/.trace/ERROR_TRACE.md`);
      await Deno.symlink(`${outside}/secret.txt`, `${project}/.trace/ERROR_TRACE.md`);
      const result = await runLifeline(
        ["fail", "handle", "--root", project, "--task", "T1", "--skill", "build", "--error", "x"],
        { env },
      );
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /^error: Refusing ".*ERROR_TRACE\.md": it is a symbolic link\n/);
      assert.doesNotMatch(result.stderr, /internal error|\n\s+at /);
      assert.equal(await Deno.readTextFile(`${outside}/secret.txt`), "outside text\n");
    });
  },
});

Deno.test({
  name: "hook crash: a FIFO transcript_path does not block it",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await layout(dir);
      await mkfifo(`${dir}/transcript.jsonl`);
      const input = {
        ...await hookInput("hh-text", "SessionStart"),
        transcript_path: `${dir}/transcript.jsonl`,
      };
      const started = Date.now();
      await hook(dir, "crash", input, 8000);
      assert.ok(Date.now() - started < 8000);
    });
  },
});

Deno.test({
  name: "hooks: a FIFO .lifeline/config.json does not block them: defaults, and one log line",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { project } = await layout(dir);
      await Deno.mkdir(`${project}/.lifeline`);
      await mkfifo(`${project}/.lifeline/config.json`);
      const fail = await hookInput("hh-tool-fail", "PostToolUseFailure");
      await hook(dir, "track", fail, 8000);
      const second = await hook(dir, "track", fail, 8000);
      assert.ok(parseHookStdout(second.stdout, "PostToolUseFailure"), "advice at the default 2");
      const log = await ownLogLines(`${dir}/home`);
      assert.equal(log.length, 2, "one line per call");
      assert.match(String(log[0]!.message), /invalid config, using defaults: .*not a regular file/);
    });
  },
});

Deno.test({
  name:
    "daemon stale: a transcript of /dev/zero does not stall the tick; the next session is handled",
  ignore: IGNORE || !(await Deno.lstat("/dev/zero").catch(() => null)),
  async fn() {
    await withTempDir(async (dir) => {
      const { project } = await layout(dir);
      for (const [id, transcript] of [["a-zero", "/dev/zero"], ["b-normal", null]] as const) {
        await registerSession(project, id, { heartbeatAgo: 900, transcript });
      }
      const result = await runLifeline(["daemon", "stale", "--once", "--json", "--root", project], {
        env: { HOME: `${dir}/home` },
        timeoutMs: 10_000,
      });
      assert.equal(result.code, 0, result.stderr);
      const actions = result.stdout.trim().split("\n").map((line) => JSON.parse(line))
        .filter((line) => !line.event).map((line) => line.action);
      assert.deepEqual(actions, ["scavenge", "scavenge"]);
      const handoff = await Deno.readTextFile(`${project}/sessions/a-zero/handoffs/scavenged.md`);
      assert.match(handoff, /The transcript could not be read \(\/dev\/zero: .*not a regular file/);
    });
  },
});
