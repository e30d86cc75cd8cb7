import assert from "node:assert/strict";
import fc from "fast-check";
import { bytesReader } from "../lib/core/cli.ts";
import {
  capContext,
  CONTEXT_EVENTS,
  contextOutput,
  HookInputError,
  MAX_CONTEXT_CHARS,
  parseHookInput,
  readStdinText,
} from "../lib/claude/hook_io.ts";
import { hookCaptures, hookScenarios } from "./helpers/fixtures.ts";

Deno.test("every real 2.1.328 hook payload parses, with its unknown fields kept", async () => {
  const events = new Set<string>();
  for (const scenario of await hookScenarios()) {
    for (const capture of await hookCaptures(scenario)) {
      const parsed = await parseHookInput(JSON.stringify(capture.input));
      assert.deepEqual(parsed, capture.input, `${scenario} ${capture.event}`);
      events.add(parsed.hook_event_name);
    }
  }
  for (
    const event of [
      "SessionStart",
      "UserPromptSubmit",
      "PreToolUse",
      "PostToolUse",
      "PostToolUseFailure",
      "Stop",
      "StopFailure",
      "SessionEnd",
      "Notification",
      "PermissionRequest",
    ]
  ) {
    assert.ok(events.has(event), `the fixtures cover ${event}`);
  }
});

Deno.test("unknown fields and unknown events are kept", async () => {
  const input = await parseHookInput(JSON.stringify({
    session_id: "s",
    cwd: "/p",
    hook_event_name: "PostToolBatch",
    tool_calls: [{ tool_name: "Bash" }],
    future_field: { x: 1 },
  }));
  assert.equal(input.hook_event_name, "PostToolBatch");
  assert.deepEqual((input as Record<string, unknown>).future_field, { x: 1 });
});

Deno.test("bad input is rejected with a reason that names the field", async () => {
  const cases: [string, RegExp][] = [
    ["not json", /stdin is not JSON/],
    ["[1,2]", /not a JSON object/],
    ["null", /not a JSON object/],
    [
      '{"cwd":"/p","hook_event_name":"Stop","stop_hook_active":false}',
      /session_id: required string is missing/,
    ],
    [
      '{"session_id":5,"cwd":"/p","hook_event_name":"Stop"}',
      /session_id: expected string, got number/,
    ],
    [
      '{"session_id":"s","cwd":"/p","hook_event_name":"PostToolUseFailure","tool_name":"Bash"}',
      /error: required string is missing/,
    ],
    ['{"session_id":"s","cwd":"/p","hook_event_name":"SessionStart"}', /source: required string/],
  ];
  for (const [text, message] of cases) {
    await assert.rejects(() => parseHookInput(text), (e: unknown) => {
      assert.ok(e instanceof HookInputError);
      assert.match(e.message, message, text);
      return true;
    });
  }
});

Deno.test("property: parseHookInput never throws anything but HookInputError", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((v) => JSON.stringify(v))),
      async (text) => {
        try {
          await parseHookInput(text);
        } catch (error) {
          if (!(error instanceof HookInputError)) throw error;
        }
      },
    ),
    { numRuns: 2000 },
  );
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        session_id: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
        cwd: fc.oneof(fc.string(), fc.constant(undefined)),
        hook_event_name: fc.constantFrom(...CONTEXT_EVENTS, "StopFailure", "SessionEnd", "x"),
        tool_name: fc.oneof(fc.string(), fc.integer()),
        error: fc.oneof(fc.string(), fc.boolean()),
      }, { requiredKeys: [] }),
      async (input) => {
        try {
          await parseHookInput(JSON.stringify(input));
        } catch (error) {
          if (!(error instanceof HookInputError)) throw error;
        }
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("contextOutput names the event that fired, and only for events that carry context", () => {
  for (const event of CONTEXT_EVENTS) {
    assert.deepEqual(contextOutput(event, "hello"), {
      hookSpecificOutput: { hookEventName: event, additionalContext: "hello" },
    });
  }
  assert.equal(contextOutput("SessionEnd", "hello"), null);
  assert.equal(contextOutput("StopFailure", "hello"), null);
  assert.equal(contextOutput("PostToolUse", "  \n"), null);
});

Deno.test("context is capped at 10,000 characters and says it was cut", () => {
  const long = "x".repeat(25_000);
  const capped = capContext(long);
  assert.equal(capped.length, MAX_CONTEXT_CHARS);
  assert.match(capped, /truncated/);
  assert.equal(capContext("short"), "short");
  const output = contextOutput("UserPromptSubmit", long)!;
  assert.equal(output.hookSpecificOutput.additionalContext.length, MAX_CONTEXT_CHARS);
});

Deno.test("readStdinText reads everything, and refuses oversized input, terminals and hangs", async () => {
  const text = "é".repeat(100_000);
  assert.equal(await readStdinText(bytesReader(text)), text);
  await assert.rejects(
    readStdinText(bytesReader("x".repeat(1000)), { maxBytes: 999 }),
    /larger than 999/,
  );
  await assert.rejects(
    readStdinText({ read: () => Promise.resolve(0), isTerminal: () => true }),
    /terminal/,
  );
  await assert.rejects(
    readStdinText({ read: () => new Promise(() => {}), isTerminal: () => false }, {
      timeoutMs: 50,
    }),
    /did not close within 50 ms/,
  );
});
