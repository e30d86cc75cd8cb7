// Type-level check: what lifeline's hooks print is a valid `SyncHookJSONOutput` of the client's
// own SDK (0.3.328), and an output naming the wrong event shape is not. tests/sdk_types_test.ts
// type-checks and runs this file against the SDK's published types; it fails if either stops
// holding.
import assert from "node:assert/strict";
import type { SyncHookJSONOutput } from "@anthropic-ai/claude-agent-sdk";
import { CONTEXT_EVENTS, contextOutput, type HookOutput } from "../../lib/claude/hook_io.ts";

type Assert<T extends true> = T;
type IsAssignable<A, B> = [A] extends [B] ? true : false;

// Every output lifeline can build is one the client accepts.
export type OutputIsValid = Assert<IsAssignable<HookOutput, SyncHookJSONOutput>>;
// Each event's output is accepted on its own, too.
export type PostToolUseIsValid = Assert<
  IsAssignable<
    Extract<HookOutput, { hookSpecificOutput: { hookEventName: "PostToolUse" } }>,
    SyncHookJSONOutput
  >
>;

Deno.test("built outputs type-check as the client's SyncHookJSONOutput", () => {
  for (const event of CONTEXT_EVENTS) {
    const output: SyncHookJSONOutput | null = contextOutput(event, "x");
    assert.ok(output);
    const wrong: SyncHookJSONOutput = {
      hookSpecificOutput: {
        // @ts-expect-error: SessionEnd has no hookSpecificOutput; the client rejects this.
        hookEventName: "SessionEnd",
        additionalContext: "x",
      },
    };
    assert.ok(wrong);
  }
});
