// Hooks fail open: on bad input or internal failure they exit 0, print nothing and log one line
// to lifeline's own log (DESIGN §5). Every hook is held to it.
import assert from "node:assert/strict";
import fc from "fast-check";
import { hookInput } from "./helpers/fixtures.ts";
import { ownLogLines, parseHookStdout, runLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

/** Hooks and a valid input each accepts (used to build malformed variants). */
const HOOKS: { name: string; scenario: string; event: string }[] = [
  { name: "remind", scenario: "hh-text", event: "UserPromptSubmit" },
  { name: "heartbeat", scenario: "hh-tool-ok", event: "PostToolUse" },
  { name: "track", scenario: "hh-tool-fail", event: "PostToolUseFailure" },
  { name: "crash", scenario: "hh-text", event: "SessionStart" },
];

function malformedInputs(valid: Record<string, unknown>): [string, string | Uint8Array][] {
  const text = JSON.stringify(valid);
  const { session_id: _, ...withoutSession } = valid;
  return [
    ["empty", ""],
    ["not JSON", "hello, hook"],
    ["truncated", text.slice(0, text.length / 2)],
    ["binary bytes", crypto.getRandomValues(new Uint8Array(4096))],
    ["10 MB of garbage", "{".repeat(10 << 20)],
    ["40 MB, past the input limit", " ".repeat(40 << 20)],
    ["a JSON array", "[1,2,3]"],
    ["wrong types", JSON.stringify({ ...valid, session_id: 12, cwd: ["x"] })],
    ["missing session_id", JSON.stringify(withoutSession)],
    ["path traversal", JSON.stringify({ ...valid, session_id: "../../../tmp/x" })],
    ["a relative cwd", JSON.stringify({ ...valid, cwd: "project" })],
  ];
}

for (const hook of HOOKS) {
  Deno.test(`hook ${hook.name}: malformed stdin exits 0, prints nothing, logs one line`, async () => {
    await withTempDir(async (dir) => {
      const home = `${dir}/home`;
      const valid = { ...await hookInput(hook.scenario, hook.event), cwd: `${dir}/project` };
      let logged = 0;
      for (const [label, stdin] of malformedInputs(valid)) {
        const result = await runLifeline(["hook", hook.name], {
          stdin,
          env: { HOME: home },
          cwd: dir,
        });
        assert.equal(result.code, 0, label);
        assert.equal(result.stdout, "", label);
        assert.equal(result.stderr, "", label);
        const log = await ownLogLines(home);
        assert.equal(log.length, logged + 1, `${label}: one log line`);
        assert.equal(log.at(-1)!.command, `hook ${hook.name}`);
        logged = log.length;
      }
      await assert.rejects(Deno.stat(`${dir}/project`), Deno.errors.NotFound, "nothing written");
    });
  });

  Deno.test(`hook ${hook.name}: a valid 10 MB input is still handled`, async () => {
    await withTempDir(async (dir) => {
      const valid = {
        ...await hookInput(hook.scenario, hook.event),
        cwd: `${dir}/project`,
        huge: "p".repeat(10 << 20),
      };
      await Deno.mkdir(`${dir}/project`);
      const result = await runLifeline(["hook", hook.name], {
        stdin: JSON.stringify(valid),
        env: { HOME: `${dir}/home` },
      });
      assert.equal(result.code, 0);
      if (hook.name === "remind") assert.ok(parseHookStdout(result.stdout, hook.event));
      else assert.equal(result.stdout, "");
      assert.deepEqual(await ownLogLines(`${dir}/home`), []);
    });
  });

  Deno.test(`hook ${hook.name}: property: arbitrary stdin never breaks the contract`, async () => {
    await withTempDir(async (dir) => {
      const home = `${dir}/home`;
      const valid = { ...await hookInput(hook.scenario, hook.event), cwd: `${dir}/project` };
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.uint8Array({ maxLength: 2048 }),
            fc.string(),
            fc.jsonValue().map((v) => JSON.stringify(v)),
            // Valid input with one field replaced by anything (but an absolute cwd, which is a
            // valid project anywhere on this machine: the hook would rightly write there).
            fc.tuple(fc.constantFrom(...Object.keys(valid)), fc.jsonValue())
              .filter(([key, value]) => !(key === "cwd" && String(value).startsWith("/")))
              .map(([key, value]) => JSON.stringify({ ...valid, [key]: value })),
          ),
          async (stdin) => {
            // Run from the scratch directory: whatever a bad input makes of the root, no state
            // may land anywhere else (nor in the repository the tests run from).
            const result = await runLifeline(["hook", hook.name], {
              stdin,
              env: { HOME: home },
              cwd: dir,
            });
            assert.equal(result.code, 0);
            assert.equal(result.stderr, "");
            // Nothing, or exactly one object for the event that fired.
            if (result.stdout !== "") parseHookStdout(result.stdout, hook.event);
          },
        ),
        { numRuns: 12 },
      );
    });
  });

  Deno.test(`hook ${hook.name}: an unwritable state directory leaves it silent with exit 0`, async () => {
    await withTempDir(async (dir) => {
      const project = `${dir}/project`;
      await Deno.mkdir(project);
      // sessions/ is a file: every session directory under it is impossible, even for root.
      await Deno.writeTextFile(`${project}/sessions`, "not a directory");
      const input = { ...await hookInput(hook.scenario, hook.event), cwd: project };
      const result = await runLifeline(["hook", hook.name], {
        stdin: JSON.stringify(input),
        env: { HOME: `${dir}/home` },
      });
      assert.equal(result.code, 0);
      assert.equal(result.stderr, "");
      if (hook.name === "remind") {
        // The reminder needs no state; the outbox it could not check is logged.
        assert.ok(parseHookStdout(result.stdout, hook.event));
      } else {
        assert.equal(result.stdout, "");
      }
      assert.equal((await ownLogLines(`${dir}/home`)).length, 1);
    });
  });
}

Deno.test("hooks stay silent and exit 0 even when lifeline's own log cannot be written", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/state`, "the state directory is a file");
    const result = await runLifeline(["hook", "heartbeat"], {
      stdin: "not json",
      env: { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` },
    });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, "");
    assert.equal(result.stderr, "");
  });
});
