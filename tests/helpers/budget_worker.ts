/**
 * A worker that times pattern runs and crash scans on adversarial input, so that a test can stop
 * one that backtracks for minutes (by terminating the worker) and report it as a failure instead
 * of hanging. It posts `{ started: name }` before each run and `{ name, ms }` after it, then
 * `{ done: true }`.
 *
 *   { kind: "regex", source, flags }   the pattern on every input of `adversarialInputs`: its
 *                                      first match, or with the g flag every match (`replace`)
 *   { kind: "redact" }                 `redact()` on the secret patterns' adversarial inputs
 *   { kind: "plan", name, text }       `scanLeftovers` on a project whose plan is `text`
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { scanLeftovers } from "../../lib/sessions/crash_recovery.ts";
import {
  ASSIGNMENT_PATTERN,
  redact,
  TOKEN_PATTERNS,
  VALUE_PATTERNS,
} from "../../lib/sessions/secrets.ts";

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
  // The pattern's own words: not its character classes, escapes (`\b`) or the names of its groups.
  const words = source
    .replace(/\[(?:\\.|[^\]\\])*\]|\\[A-Za-z]|\(\?<[A-Za-z]+>|\\k<[A-Za-z]+>/g, " ")
    .match(/[A-Za-z]{2,}/g) ?? [];
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
    const word = words[0]!;
    inputs.push({ name: `"${word}" then filler`, text: word + fill(" x") });
    inputs.push({ name: `"${word} " repeated`, text: fill(word + " ") });
    // The word glued to the characters tokens are made of, over and over: every occurrence is a
    // start for a pattern that does not look behind it (the red team's `-eyJ-eyJ…`).
    for (const glue of ["-", "_", ".", ":", "="]) {
      inputs.push({ name: `"${glue}${word}" repeated`, text: fill(glue + word) });
      inputs.push({ name: `"${word}${glue}" repeated`, text: fill(word + glue) });
    }
    inputs.push({ name: `"${word}aaaaaaa-" repeated`, text: word + fill("aaaaaaa-" + word) });
    inputs.push({ name: `"${word}aaaaaaaa." repeated`, text: fill(`${word}aaaaaaaa.`) });
  }
  return inputs;
}

/** Inputs of 1 MB for `redact()`: each secret pattern's, and the red team's. */
export function redactInputs(): { name: string; text: string }[] {
  const sources = [...TOKEN_PATTERNS, ...VALUE_PATTERNS, { pattern: ASSIGNMENT_PATTERN }]
    .map(({ pattern }) => pattern.source);
  const seen = new Set<string>();
  const inputs = [
    { name: '"-eyJ" repeated', text: fill("-eyJ") },
    { name: '"eyJ" and "aaaaaaa-eyJ" repeated', text: "eyJ" + fill("aaaaaaa-eyJ") },
    { name: "two JWT parts repeated", text: fill("eyJaaaaaaaa.eyJaaaaaaaa-") },
    { name: '"Bearer aaaaaaaa " repeated', text: fill("Bearer aaaaaaaa ") },
    { name: '"ab://cc" repeated', text: fill("ab://cc") },
    { name: '"ab://c:" repeated', text: fill("ab://c:") },
    { name: '"a://b:c@" repeated', text: fill("a://b:c@") },
    { name: '"-----BEGIN AAAA " repeated', text: fill("-----BEGIN AAAA ") },
    { name: '"sk-aaaaaaa-" repeated', text: fill("sk-aaaaaaa-") },
    { name: '"password_aaaaaaaaa" repeated', text: fill("password_aaaaaaaaa") },
    { name: '"token-aaaa" repeated', text: fill("token-aaaa") },
    { name: '"authorization:a" repeated', text: fill("authorization:a") },
    { name: '"mysql " repeated', text: fill("mysql ") },
    { name: '"A_" repeated', text: fill("A_") },
    { name: '"a:1:b:c:" repeated', text: fill("a:1:b:c:") },
    { name: '"machine a login b " repeated', text: fill("machine a login b ") },
    { name: '"-u a:" repeated', text: fill(" -u a:") },
  ];
  for (const source of sources) {
    for (const input of adversarialInputs(source)) {
      if (!seen.has(input.name)) inputs.push(input);
      seen.add(input.name);
    }
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
      env: { HOME: root },
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
      if (pattern.global) input.text.replace(pattern, "");
      else pattern.exec(input.text);
      self.postMessage({ name: input.name, ms: performance.now() - start });
    }
  } else if (job.kind === "redact") {
    // redact() is some fifty linear passes: the median of three runs, so that a collection or a
    // busy machine does not count as backtracking.
    for (const input of redactInputs()) {
      self.postMessage({ started: input.name });
      const times = [0, 1, 2].map(() => {
        const start = performance.now();
        redact(input.text);
        return performance.now() - start;
      }).sort((a, b) => a - b);
      self.postMessage({ name: input.name, ms: times[1] });
    }
  } else {
    self.postMessage({ started: "scan" });
    await scanPlan(job.text);
  }
  self.postMessage({ done: true });
};
