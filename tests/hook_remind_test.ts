import assert from "node:assert/strict";
import { REMINDER } from "../commands/hook_remind.ts";
import { hookCaptures, hookInput, hookScenarios } from "./helpers/fixtures.ts";
import { ownLogLines, parseHookStdout, runLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

/** Runs `hook remind` on a real payload moved into `project`. */
async function remind(
  dir: string,
  input: Record<string, unknown>,
  env: Record<string, string> = {},
) {
  await Deno.mkdir(`${dir}/project`, { recursive: true });
  const stdin = JSON.stringify({ ...input, cwd: `${dir}/project` });
  return await runLifeline(["hook", "remind"], { stdin, env: { HOME: `${dir}/home`, ...env } });
}

Deno.test("hook remind gives every real UserPromptSubmit the self-heal rules, as one JSON object", async () => {
  await withTempDir(async (dir) => {
    let seen = 0;
    for (const scenario of await hookScenarios()) {
      for (const capture of await hookCaptures(scenario)) {
        if (capture.event !== "UserPromptSubmit") continue;
        seen++;
        const result = await remind(dir, capture.input);
        assert.equal(result.code, 0);
        assert.equal(result.stderr, "");
        const output = parseHookStdout(result.stdout, "UserPromptSubmit");
        assert.equal(output?.hookSpecificOutput.additionalContext, REMINDER);
      }
    }
    assert.ok(seen >= 10);
  });
});

Deno.test("the reminder carries the five operating rules of the self-heal spec", () => {
  assert.match(REMINDER, /Close every tag and every parameter/);
  assert.match(REMINDER, /one tool call per message/);
  assert.match(REMINDER, /twice through one channel, switch channel: Bash <-> a script/);
  assert.match(REMINDER, /Edit\/Write\) <-> a small script that does the string replacement/);
  assert.match(REMINDER, /long content .* to a file first and pass its path/);
  assert.match(REMINDER, /After 3 failed attempts at the same step, stop retrying: report/);
});

Deno.test("hook remind is silent while the kill switch is off, and speaks again when it is on", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-text", "UserPromptSubmit");
    const env = { HOME: `${dir}/home` };
    assert.equal((await runLifeline(["selfheal", "off"], { env })).code, 0);
    const silent = await remind(dir, input);
    assert.equal(silent.code, 0);
    assert.equal(silent.stdout, "");
    assert.equal((await runLifeline(["selfheal", "on"], { env })).code, 0);
    assert.ok(parseHookStdout((await remind(dir, input)).stdout, "UserPromptSubmit"));
  });
});

Deno.test("hook remind reads the kill switch from $CLAUDE_CONFIG_DIR", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-text", "UserPromptSubmit");
    await Deno.mkdir(`${dir}/cc`);
    await Deno.writeTextFile(`${dir}/cc/self-heal.off`, "");
    assert.equal((await remind(dir, input, { CLAUDE_CONFIG_DIR: `${dir}/cc` })).stdout, "");
    assert.ok(parseHookStdout((await remind(dir, input)).stdout, "UserPromptSubmit"));
  });
});

Deno.test("hook remind still reminds when the kill switch cannot be checked (fail open)", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/a-file`, "");
    // The switch would be a-file/self-heal.off: checking it fails with "not a directory".
    const result = await remind(dir, await hookInput("hh-text", "UserPromptSubmit"), {
      CLAUDE_CONFIG_DIR: `${dir}/a-file`,
    });
    assert.equal(
      parseHookStdout(result.stdout, "UserPromptSubmit")?.hookSpecificOutput.additionalContext,
      REMINDER,
    );
  });
});

Deno.test("hook remind delivers pending outbox advice once, then clears it", async () => {
  await withTempDir(async (dir) => {
    const input = await hookInput("hh-529", "UserPromptSubmit");
    const outbox = `${dir}/project/sessions/${input.session_id}/outbox.jsonl`;
    await Deno.mkdir(`${dir}/project/sessions/${input.session_id}`, { recursive: true });
    await Deno.writeTextFile(
      outbox,
      [
        { ts: "2026-11-30T15:00:00Z", source: "hook track", text: "[MODEL FALLBACK] try sonnet" },
        { ts: "2026-11-30T15:00:01Z", source: "hook track", text: "[TOOL FALLBACK] use WebFetch" },
      ].map((a) => JSON.stringify(a)).join("\n") + "\n",
    );
    const first = parseHookStdout((await remind(dir, input)).stdout, "UserPromptSubmit");
    const context = first!.hookSpecificOutput.additionalContext;
    assert.ok(context.startsWith(REMINDER));
    assert.match(context, /\[LIFELINE\] Pending advice from earlier events:/);
    assert.match(context, /- \[MODEL FALLBACK\] try sonnet\n- \[TOOL FALLBACK\] use WebFetch$/);
    await assert.rejects(Deno.stat(outbox), Deno.errors.NotFound);
    const second = parseHookStdout((await remind(dir, input)).stdout, "UserPromptSubmit");
    assert.equal(second!.hookSpecificOutput.additionalContext, REMINDER);
  });
});

Deno.test("hook remind names the event that fired when wired to SessionStart", async () => {
  await withTempDir(async (dir) => {
    const result = await remind(dir, await hookInput("screen-429", "SessionStart"));
    assert.ok(parseHookStdout(result.stdout, "SessionStart"));
    const none = await remind(dir, await hookInput("hh-text", "SessionEnd"));
    assert.equal(none.stdout, "", "SessionEnd cannot carry context");
    assert.deepEqual(await ownLogLines(`${dir}/home`), []);
  });
});
