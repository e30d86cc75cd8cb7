import assert from "node:assert/strict";
import {
  afterAttempt,
  decide,
  newRecord,
  type PaneRecord,
  refused,
  stagger,
  type WatchPolicy,
} from "../lib/watch/watch_policy.ts";
import type { Classification } from "../lib/claude/screen.ts";

const POLICY: WatchPolicy = {
  resumeMarginSeconds: 60,
  nativeMarginSeconds: 180,
  transientBackoffSeconds: 120,
  maxAttempts: 3,
  foregroundRetries: 3,
  localZone: "UTC",
};
const T0 = Date.parse("2026-11-30T14:00:00Z");
const MIN = 60_000;

const limited: Classification = {
  state: "usage_limit",
  reason: "You've hit your <name> limit",
  idle: true,
  keys: "text",
  signature: "You've hit your 5-hour limit · resets 3pm (UTC)",
  resetText: "You've hit your 5-hour limit · resets 3pm (UTC)",
  limitKind: "5-hour",
};

function run(steps: [Classification, number][], start = newRecord("%1", "work")) {
  let record: PaneRecord = start;
  return steps.map(([c, now]) => {
    const d = decide(record, c, "hash", now, POLICY);
    record = d.record;
    return d;
  });
}

Deno.test("a usage limit waits for reset + margin, then resumes once", () => {
  const [first, before, due] = run([
    [limited, T0],
    [limited, T0 + 60 * MIN + 59_000],
    [limited, T0 + 61 * MIN],
  ]);
  assert.equal(first!.action, "wait");
  assert.equal(first!.record.reset_at, Date.parse("2026-11-30T15:00:00Z"));
  assert.equal(first!.record.resume_at, Date.parse("2026-11-30T15:01:00Z"));
  assert.equal(before!.action, "wait");
  assert.equal(due!.action, "resume");
  assert.equal(due!.keys, "text");
  const done = afterAttempt(due!.record, { ok: true, what: "typed", now: T0 + 61 * MIN }, POLICY);
  assert.equal(
    decide(done, limited, "hash", T0 + 62 * MIN, POLICY).action,
    "none",
    "one resume per reset",
  );
});

Deno.test("the reset is anchored to when the banner was first seen, not to each scan", () => {
  const [first, later] = run([[limited, T0], [limited, T0 + 2 * 3600_000]]);
  assert.equal(first!.record.first_seen_at, T0);
  assert.equal(later!.record.first_seen_at, T0);
  assert.equal(later!.action, "resume", "15:00 passed; not tomorrow's 15:00");
});

Deno.test("native auto-continue is left alone until its time plus 3 minutes", () => {
  const { keys: _, ...banner } = limited;
  const native: Classification = { ...banner, state: "native_autocontinue", resetText: "3pm" };
  const [a, b, c] = run([[native, T0], [native, T0 + 62 * MIN], [native, T0 + 63 * MIN]]);
  assert.equal(a!.action, "wait");
  assert.equal(
    b!.action,
    "wait",
    "past the reset + 60 s margin, but the client's own continue may still come",
  );
  assert.equal(c!.action, "resume");
  // After Esc it is the same episode, and the normal margin applies.
  const [, afterEsc] = run([[native, T0], [limited, T0 + 61 * MIN]]);
  assert.equal(afterEsc!.action, "resume");
  assert.equal(afterEsc!.record.first_seen_at, T0);
});

Deno.test("a transient API error resumes after a backoff, not at a reset time", () => {
  const error: Classification = {
    state: "transient_api_error",
    reason: "529 overloaded",
    idle: true,
    keys: "text",
    signature: "API Error: Repeated 529 Overloaded errors.",
  };
  const [a, b] = run([[error, T0], [error, T0 + 120_000]]);
  assert.equal(a!.action, "wait");
  assert.equal(a!.record.reset_at, null);
  assert.equal(b!.action, "resume");
});

Deno.test("a failing API is resumed 3 times in a row, then reported and left to the user", () => {
  const error: Classification = {
    state: "transient_api_error",
    reason: "529 overloaded",
    idle: true,
    keys: "text",
    signature: "API Error: Repeated 529 Overloaded errors.",
  };
  const busy: Classification = { state: "busy", reason: "esc to interrupt", idle: false };
  let record = newRecord("%1", "work");
  let now = T0;
  const actions: string[] = [];
  for (let round = 0; round < 5; round++) {
    // The error shows; after the backoff the watcher resumes; the agent works, and fails again.
    for (const at of [now, now + 120_000]) {
      const d = decide(record, error, "error", at, POLICY);
      record = d.record;
      actions.push(d.action);
      if (d.action === "resume") {
        record = afterAttempt(record, { ok: true, what: "typed", now: at }, POLICY);
      }
    }
    record = decide(record, busy, "busy", now + 130_000, POLICY).record;
    now += 10 * MIN;
  }
  assert.deepEqual(actions, [
    ...["wait", "resume", "wait", "resume", "wait", "resume"],
    ...["report", "none", "report", "none"],
  ]);
  assert.equal(record.api_retries, 3);
  const reported = decide(record, error, "error", now, POLICY);
  assert.match(reported.reason, /529 overloaded again after 3 resumes in a row; needs the user/);

  // Once the agent is seen idle without an error, the count starts again.
  const idle: Classification = { state: "normal", reason: "idle", idle: true };
  const fresh = decide(record, idle, "idle", now, POLICY).record;
  assert.equal(fresh.api_retries, 0);
  assert.equal(decide(fresh, error, "error", now + 120_000, POLICY).action, "wait");
});

Deno.test("an unreadable reset is never acted on; it is looked at again with a capped backoff", () => {
  const garbled = {
    ...limited,
    resetText: "You've hit your limit · resets soonish",
    signature: "x",
  };
  const decisions = run(
    Array.from({ length: 8 }, (_, i) => [garbled, T0 + i * 3600_000] as [Classification, number]),
  );
  assert.ok(decisions.every((d) => d.action === "wait"));
  assert.match(decisions[0]!.reason, /reset time not understood .* look again in 60s/);
  assert.match(decisions[7]!.reason, /look again in 1800s/);
});

Deno.test("prompts, busy and permanent screens: never resume; permanent reported once per screen", () => {
  const busy: Classification = { state: "busy", reason: "esc to interrupt", idle: false };
  const prompt: Classification = {
    state: "dangerous_prompt",
    reason: "permission question",
    idle: false,
  };
  const permanent: Classification = { state: "permanent", reason: "login needed", idle: true };
  assert.equal(run([[busy, T0]])[0]!.action, "none");
  assert.equal(run([[prompt, T0]])[0]!.action, "none");
  const [first, again] = run([[permanent, T0], [permanent, T0 + MIN]]);
  assert.equal(first!.action, "report");
  assert.equal(again!.action, "none");
  const menu: Classification = {
    state: "limit_menu",
    reason: "limit menu on Upgrade",
    idle: false,
  };
  assert.equal(run([[menu, T0 + 2 * 3600_000]])[0]!.action, "none");
});

Deno.test("a refusal holds until the screen changes; failures back off and give up after 3", () => {
  const [due] = run([[limited, T0 + 2 * 3600_000]]);
  const held = refused(due!.record, "permission question on screen", "hash");
  assert.equal(decide(held, limited, "hash", T0 + 3 * 3600_000, POLICY).action, "none");
  assert.equal(decide(held, limited, "other", T0 + 3 * 3600_000, POLICY).action, "resume");
  let record = due!.record;
  for (let i = 1; i <= 3; i++) {
    record = afterAttempt(record, { ok: false, what: `try ${i}`, now: T0 }, POLICY);
  }
  assert.equal(record.gave_up, true);
  assert.deepEqual(record.tried, ["try 1", "try 2", "try 3"]);
  assert.match(
    decide(record, limited, "h2", T0 + 10 * 3600_000, POLICY).reason,
    /gave up after 3 attempts/,
  );
});

Deno.test("panes that reset together are staggered, each once, in a stable order", () => {
  const at = Date.parse("2026-11-30T15:01:00Z");
  const records = ["%3", "%1", "%2"].map((pane) => ({ ...newRecord(pane, "s"), resume_at: at }));
  const out = stagger(records, 10_000, () => 0.5);
  const byPane = Object.fromEntries(out.map((r) => [r.pane, r.resume_at! - at]));
  assert.equal(byPane["%1"], 0);
  assert.ok(byPane["%2"]! >= 10_000 && byPane["%2"]! <= 11_000);
  assert.ok(byPane["%3"]! >= byPane["%2"]! + 10_000);
  assert.deepEqual(stagger(out, 10_000, () => 0.5), out, "already staggered: unchanged");
});

Deno.test("a banner that goes away ends the episode", () => {
  const normal: Classification = { state: "normal", reason: "nothing to act on", idle: true };
  const [, cleared] = run([[limited, T0], [normal, T0 + MIN]]);
  assert.equal(cleared!.record.episode, null);
  assert.equal(cleared!.record.attempts, 0);
});
