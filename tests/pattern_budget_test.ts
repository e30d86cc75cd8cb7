// Every pattern that sees user or tool text is linear: on adversarial input of 1 MB each one
// finishes well under 100 ms, and so does the crash scan (issue 13, items 1 and 2). The patterns
// are found by walking the modules' exports, so a pattern added later is covered without touching
// this file. Each run happens in a worker that is terminated when it overruns, so a backtracking
// pattern fails the test instead of hanging it.
import assert from "node:assert/strict";
import * as patterns from "../lib/claude/patterns.ts";
import * as screenPatterns from "../lib/claude/screen_patterns.ts";
import * as secrets from "../lib/sessions/secrets.ts";
import { fill } from "./helpers/budget_worker.ts";

const BUDGET_MS = 100;
/** How long one run may take before it counts as stuck (building its 1 MB input included). */
const STUCK_MS = 5_000;

/** Every RegExp among a module's exports: bare, named (`{ pattern }`), or in arrays of either. */
function exportedPatterns(module: Record<string, unknown>): { name: string; pattern: RegExp }[] {
  const found: { name: string; pattern: RegExp }[] = [];
  const visit = (name: string, value: unknown) => {
    if (value instanceof RegExp) found.push({ name, pattern: value });
    else if (Array.isArray(value)) value.forEach((item, i) => visit(`${name}[${i}]`, item));
    else if (value && typeof value === "object" && "pattern" in value) {
      const label = (value as { name?: unknown; id?: unknown }).name ??
        (value as { id?: unknown }).id;
      visit(`${name} (${String(label)})`, value.pattern);
    }
  };
  for (const [name, value] of Object.entries(module)) visit(name, value);
  return found;
}

/** Runs a job in the budget worker; returns each run's time, or the run that never finished. */
function inWorker(job: unknown): Promise<{ times: Map<string, number>; stuck?: string }> {
  const worker = new Worker(new URL("./helpers/budget_worker.ts", import.meta.url), {
    type: "module",
  });
  const times = new Map<string, number>();
  let current = "(start-up)";
  return new Promise((resolve, reject) => {
    const stuck = () => {
      worker.terminate();
      resolve({ times, stuck: current });
    };
    let timer = setTimeout(stuck, STUCK_MS);
    worker.onerror = (event) => {
      clearTimeout(timer);
      worker.terminate();
      reject(new Error(event.message));
    };
    worker.onmessage = ({ data }) => {
      clearTimeout(timer);
      timer = setTimeout(stuck, STUCK_MS);
      if (data.started) current = data.started;
      else if (data.done) {
        clearTimeout(timer);
        worker.terminate();
        resolve({ times });
      } else times.set(data.name, data.ms);
    };
    worker.postMessage(job);
  });
}

function assertWithinBudget(what: string, result: { times: Map<string, number>; stuck?: string }) {
  assert.equal(
    result.stuck,
    undefined,
    `${what} on ${result.stuck}: still running after ${STUCK_MS} ms`,
  );
  for (const [input, ms] of result.times) {
    assert.ok(ms < BUDGET_MS, `${what} on ${input}: ${ms.toFixed(0)} ms`);
  }
}

for (
  const [file, module] of [
    ["lib/claude/patterns.ts", patterns],
    ["lib/claude/screen_patterns.ts", screenPatterns],
    ["lib/sessions/secrets.ts", secrets],
  ] as const
) {
  Deno.test(`every pattern of ${file} runs in linear time on 1 MB of adversarial text`, async (t) => {
    const found = exportedPatterns(module);
    assert.ok(found.length >= 5, `only ${found.length} patterns found in ${file}`);
    for (const { name, pattern } of found) {
      await t.step({
        name,
        fn: async () => {
          const result = await inWorker({
            kind: "regex",
            source: pattern.source,
            flags: pattern.flags,
          });
          assertWithinBudget(name, result);
        },
      });
    }
  });
}

Deno.test("redact() runs in linear time on 1 MB of every secret pattern's adversarial text", async () => {
  assertWithinBudget("redact()", await inWorker({ kind: "redact" }));
});

Deno.test("the crash scan reads an adversarial 1 MB plan well under 100 ms", async (t) => {
  const plans = {
    "a heading with 3000 spaces inside": "# a" + " ".repeat(3000) + "b\n- [ ] step\n",
    "a heading with 1 MB of spaces": "# " + fill(" ") + "x\n",
    "a heading of hashes": "# " + fill("#") + "\n",
    "a heading of spaces and hashes": "# a" + fill(" #") + "\n",
    "checkbox-like lines": fill("- [ ]  \n"),
    "one line of spaces": fill(" "),
  };
  for (const [name, text] of Object.entries(plans)) {
    await t.step(name, async () => {
      assertWithinBudget(`the scan of ${name}`, await inWorker({ kind: "plan", text }));
    });
  }
});

Deno.test("firstMatch still finds what the head or the tail of a long text says", () => {
  const error = `MCP error: connection closed${fill("x", 4 << 20)}`;
  assert.equal(
    patterns.firstMatch(patterns.MCP_CONNECTION_ERRORS, error)?.name,
    "connection closed",
  );
  const tail = fill("x", 4 << 20) + " write EPIPE";
  assert.equal(patterns.firstMatch(patterns.MCP_CONNECTION_ERRORS, tail)?.name, "EPIPE");
});
