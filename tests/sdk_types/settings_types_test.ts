// Type-level check: the hooks `lifeline init` writes have the shape of the client's own
// `Settings` type (SDK 0.3.328), and what init writes at run time is exactly that shape. Run by
// tests/sdk_types_test.ts against the SDK's published types.
import assert from "node:assert/strict";
import type { Settings } from "@anthropic-ai/claude-agent-sdk";
import { type LifelineHooks, lifelineHooks, mergeHooks } from "../../lib/claude/settings.ts";

type Assert<T extends true> = T;
type IsAssignable<A, B> = [A] extends [B] ? true : false;

export type HooksAreSettings = Assert<IsAssignable<{ hooks: LifelineHooks }, Settings>>;

Deno.test("init's merge into an empty file gives exactly the typed hooks", () => {
  const typed: Settings = { hooks: lifelineHooks("lifeline") };
  const merged = mergeHooks({}, "lifeline").settings;
  assert.deepEqual(merged, typed);
  // The client's matcher rules: tool events match "*", the others have none.
  assert.equal(typed.hooks?.PostToolUse?.[0]?.matcher, "*");
  assert.equal(typed.hooks?.UserPromptSubmit?.[0]?.matcher, undefined);
});
