/**
 * A worker that times pattern runs and crash scans on adversarial input, so that a test can stop
 * one that backtracks for minutes (by terminating the worker) and report it as a failure instead
 * of hanging. It posts `{ started: name }` before each run and `{ name, ms }` after it, then
 * `{ done: true }`.
 *
 *   { kind: "regex", source, flags }   the pattern on every input of `adversarialInputs`
 *   { kind: "plan", name, text }       `scanLeftovers` on a project whose plan is `text`
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { scanLeftovers } from "../../lib/sessions/crash_recovery.ts";

const MB = 1 << 20;

/** `unit` repeated to `size` characters. */
export function fill(unit: string, size = MB): string {
  return unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
}

/**
 * Inputs of 1 MB that make backtracking regexes blow up: the cases (`"server not "`
 * repeated, `MCP` and many characters without `disconnect`, a heading of spaces), the pattern's
 * own words repeated without the word that would complete a match, its first word followed by a
 * long run of filler, and runs of the characters quantifiers most often range over.
 */
export function adversarialInputs(source: string): { name: string; text: string }[] {
  const words = source.match(/[A-Za-z]{2,}/g) ?? [];
  const inputs = [
    { name: '"server not " repeated', text: fill("server not ") },
    { name: "MCP and many characters without disconnect", text: "MCP " + fill("x") },
    { name: '"MCP " repeated', text: fill("MCP ") },
    { name: "spaces", text: fill(" ") },
    { name: "a heading of spaces", text: "# a" + fill(" ") + "b" },
    { name: "tabs and newlines", text: fill("\t\n") },
    { name: "one long word", text: fill("a") },
    { name: "separators", text: fill("· ") },
    { name: "digits", text: fill("9") },
    { name: '"resets " repeated', text: fill("resets ") },
    { name: "quotes", text: fill("' ") },
    { name: "hashes", text: fill("#") },
  ];
  if (words.length > 1) {
    const head = words.slice(0, -1).join(" ");
    inputs.push({ name: `"${head} " repeated`, text: fill(head + " ") });
  }
  if (words.length > 0) {
    inputs.push({ name: `"${words[0]}" then filler`, text: words[0] + fill(" x") });
    inputs.push({ name: `"${words[0]} " repeated`, text: fill(words[0] + " ") });
  }
  return inputs;
}

async function scanPlan(text: string): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "lifeline-budget-" });
  try {
    await Deno.mkdir(`${root}/.working-state`);
    await Deno.writeTextFile(`${root}/.working-state/current-plan.md`, text);
    const start = performance.now();
    await scanLeftovers(root, [], {
      now: Date.now(),
      loopStaleSeconds: 7200,
      claimStaleMinutes: 15,
      waitMs: 0,
      hostname: "here",
      sessionId: "s1",
      staleAfterSeconds: 900,
      pruneAfterSeconds: 7 * 86_400,
      maxPrunes: 50,
    });
    self.postMessage({ name: "scan", ms: performance.now() - start });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

self.onmessage = async (event: MessageEvent) => {
  const job = event.data;
  if (job.kind === "regex") {
    const pattern = new RegExp(job.source, job.flags);
    for (const input of adversarialInputs(job.source)) {
      self.postMessage({ started: input.name });
      const start = performance.now();
      pattern.lastIndex = 0;
      pattern.exec(input.text);
      self.postMessage({ name: input.name, ms: performance.now() - start });
    }
  } else {
    self.postMessage({ started: "scan" });
    await scanPlan(job.text);
  }
  self.postMessage({ done: true });
};
