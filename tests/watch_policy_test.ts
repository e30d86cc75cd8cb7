// The watcher's decisions, as a pure function of (record, observation, { now, …settings }).
import assert from "node:assert/strict";
import type { ScreenReading } from "../lib/claude/screen.ts";
import type { RecordSignal } from "../lib/watch/records_policy.ts";
import {
  afterAttempt,
  decidePane,
  newRecord,
  type PaneDecision,
  type PaneRecord,
  refused,
  stagger,
  type WatchOptions,
} from "../lib/watch/watch_policy.ts";

const SETTINGS: Omit<WatchOptions, "now"> = {
  resumeMarginSeconds: 60,
  nativeMarginSeconds: 180,
  transientBackoffSeconds: 120,
  maxAttempts: 3,
  foregroundRetries: 3,
  localZone: "UTC",
};
const T0 = Date.parse("2026-11-30T14:00:00Z");
const MIN = 60_000;

/** A reading of an idle agent's screen, with what a case changes. */
function screen(fields: Partial<ScreenReading> = {}): ScreenReading {
  return {
    state: "normal",
    rule: "nothing to act on",
    idle: true,
    input: "",
    confident: true,
    ...fields,
  };
}

const limited = screen({
  state: "usage_limit",
  rule: "a usage-limit banner (you've hit your limit)",
  keys: "text",
  banner: "You've hit your 5-hour limit · resets 3pm (UTC)",
  resetText: "resets 3pm (UTC)",
  limitKind: "5-hour",
});
const overloaded = screen({
  state: "transient_api_error",
  rule: "529 overloaded",
  keys: "text",
  banner: "API Error: Repeated 529 Overloaded errors.",
});

type Step = [ScreenReading, number, (RecordSignal | null)?, string?];

function decide(record: PaneRecord, [reading, now, records, hash]: Step): PaneDecision {
  return decidePane(record, { reading, screenHash: hash ?? "hash", records: records ?? null }, {
    ...SETTINGS,
    now,
  });
}

function run(steps: Step[], start = newRecord("%1", "work", "100:1")): PaneDecision[] {
  let record = start;
  return steps.map((step) => {
    const d = decide(record, step);
    record = d.state;
    return d;
  });
}

const kind = (d: PaneDecision) => d.actions[0]!.kind;
const reason = (d: PaneDecision) => d.actions[0]!.reason;

Deno.test("a usage limit waits for reset + margin, then resumes once", () => {
  const [first, before, due] = run([
    [limited, T0],
    [limited, T0 + 60 * MIN + 59_000],
    [limited, T0 + 61 * MIN],
  ]);
  assert.equal(kind(first!), "wait");
  assert.equal(first!.state.reset_at, Date.parse("2026-11-30T15:00:00Z"));
  assert.equal(first!.state.resume_at, Date.parse("2026-11-30T15:01:00Z"));
  assert.equal(
    reason(first!),
    "limited until 2026-11-30T15:00:00Z; resume at 2026-11-30T15:01:00Z",
  );
  assert.equal(kind(before!), "wait");
  assert.deepEqual(due!.actions, [{
    kind: "resume",
    keys: "text",
    reason: "the limit reset at 2026-11-30T15:00:00Z",
  }]);
  const done = afterAttempt(due!.state, { ok: true, what: "typed" }, { now: T0, maxAttempts: 3 });
  assert.equal(kind(decide(done, [limited, T0 + 62 * MIN])), "none", "one resume per reset");
});

Deno.test("the reset is anchored to when the banner was first seen, not to each scan", () => {
  const [first, later] = run([[limited, T0], [limited, T0 + 2 * 3600_000]]);
  assert.equal(first!.state.first_seen_at, T0);
  assert.equal(later!.state.first_seen_at, T0);
  assert.equal(kind(later!), "resume", "15:00 passed; not tomorrow's 15:00");
});

Deno.test("a relative reset (resets in 2h 14m) counts from when it was first seen", () => {
  const relative = screen({
    ...limited,
    banner: "Limit reached (resets 2h 14m)",
    resetText: "resets 2h 14m",
  });
  const [first, stillBefore, due] = run([
    [relative, T0],
    [relative, T0 + 2 * 3600_000],
    [relative, T0 + (134 + 1) * MIN],
  ]);
  assert.equal(first!.state.reset_at, T0 + 134 * MIN);
  assert.equal(kind(stillBefore!), "wait", "not re-anchored at each scan");
  assert.equal(kind(due!), "resume");
});

Deno.test("native auto-continue is left alone until its time plus 3 minutes", () => {
  const { keys: _, ...banner } = limited;
  const native = screen({ ...banner, state: "native_autocontinue" });
  const [a, b, c] = run([[native, T0], [native, T0 + 62 * MIN], [native, T0 + 63 * MIN]]);
  assert.equal(kind(a!), "wait");
  assert.match(
    reason(a!),
    /the client continues by itself at 2026-11-30T15:00:00Z; left alone until 2026-11-30T15:03:00Z/,
  );
  assert.equal(
    kind(b!),
    "wait",
    "past the reset + 60 s, but the client's own continue may still come",
  );
  assert.equal(kind(c!), "resume");
  // After Esc it is the same episode, and the normal margin applies.
  const [, afterEsc] = run([[native, T0], [limited, T0 + 61 * MIN]]);
  assert.equal(kind(afterEsc!), "resume");
  assert.equal(afterEsc!.state.first_seen_at, T0);
});

Deno.test("a half-typed message is never typed into, Enter-only resumes included", async (t) => {
  for (
    const [name, reading] of [
      ["a limit", {
        ...limited,
        idle: false,
        input: "git reset --hard origin/main && git push -f",
      }],
      ["Press Enter to retry", {
        ...overloaded,
        keys: "enter" as const,
        idle: false,
        input: "half a thought",
      }],
    ] as const
  ) {
    await t.step(name, () => {
      const [, due] = run([[reading, T0], [reading, T0 + 4 * 3600_000]]);
      assert.equal(kind(due!), "refuse");
      assert.match(reason(due!), /the input box holds text \("(git reset|half a)/);
    });
  }
});

Deno.test("a stale banner (reset passed more than the limit's window ago) is not a limit", () => {
  const old = screen({
    ...limited,
    banner: "Claude AI usage limit reached|1700000000",
    resetText: "|1700000000",
  });
  const [d] = run([[old, T0]]);
  assert.equal(kind(d!), "none");
  assert.equal(d!.shown.state, "normal");
  assert.match(
    reason(d!),
    /a stale banner: its reset \(2023-11-14T22:13:20Z\) passed more than the 5-hour limit's window ago/,
  );
  const weekly = screen({
    ...limited,
    banner: "weekly",
    resetText: `|${Math.floor((T0 - 6 * 24 * 3600_000) / 1000)}`,
    limitKind: "weekly",
  });
  assert.equal(kind(run([[weekly, T0]])[0]!), "resume", "6 days ago is within a weekly limit's 7");
});

Deno.test("a transient API error resumes after a backoff, not at a reset time", () => {
  const [a, b] = run([[overloaded, T0], [overloaded, T0 + 120_000]]);
  assert.equal(kind(a!), "wait");
  assert.equal(a!.state.reset_at, null);
  assert.equal(kind(b!), "resume");
});

Deno.test("a failing API is resumed 3 times in a row, then reported and left to the user", () => {
  const busy = screen({ state: "busy", rule: "busy (esc to interrupt)", idle: false });
  let record = newRecord("%1", "work", "100:1");
  let now = T0;
  const actions: string[] = [];
  for (let round = 0; round < 5; round++) {
    // The error shows; after the backoff the watcher resumes; the agent works, and fails again.
    for (const at of [now, now + 120_000]) {
      const d = decide(record, [overloaded, at, null, "error"]);
      record = d.state;
      actions.push(kind(d));
      if (kind(d) === "resume") {
        record = afterAttempt(record, { ok: true, what: "typed" }, { now: at, maxAttempts: 3 });
      }
    }
    record = decide(record, [busy, now + 130_000, null, "busy"]).state;
    now += 10 * MIN;
  }
  assert.deepEqual(actions, [
    ...["wait", "resume", "wait", "resume", "wait", "resume"],
    ...["report", "none", "report", "none"],
  ]);
  assert.equal(record.api_retries, 3);
  const reported = decide(record, [overloaded, now, null, "error"]);
  assert.match(reason(reported), /529 overloaded again after 3 resumes in a row; needs the user/);
  // Once the agent is seen idle without an error, the count starts again.
  const fresh = decide(record, [screen(), now]).state;
  assert.equal(fresh.api_retries, 0);
  assert.equal(kind(decide(fresh, [overloaded, now + 120_000])), "wait");
});

Deno.test("an unreadable reset is never acted on, and looked at again only at its time", () => {
  const garbled = screen({ ...limited, resetText: "resets soonish", banner: "x" });
  const [first, early, later] = run([
    [garbled, T0],
    [garbled, T0 + 30_000],
    [garbled, T0 + 61_000],
  ]);
  assert.equal(kind(first!), "wait");
  assert.equal(
    reason(first!),
    'reset time not understood ("resets soonish"); next look at 2026-11-30T14:01:00Z',
  );
  assert.equal(
    reason(early!),
    reason(first!),
    "the same line until the next look: nothing new to say",
  );
  assert.equal(later!.state.unparsed, 2);
  assert.match(
    reason(later!),
    /next look at 2026-11-30T14:03:01Z/,
    "then twice as long, capped at 30 min",
  );
});

Deno.test("prompts, busy and permanent screens: never resume; permanent reported once per screen", () => {
  const busy = screen({ state: "busy", rule: "busy (esc to interrupt)", idle: false });
  const prompt = screen({ state: "dangerous_prompt", rule: "a permission question", idle: false });
  const permanent = screen({ state: "permanent", rule: "a login is needed" });
  assert.equal(kind(run([[busy, T0]])[0]!), "none");
  assert.equal(
    reason(run([[prompt, T0]])[0]!),
    "a permission question on screen: never typed into",
  );
  const [first, again] = run([[permanent, T0], [permanent, T0 + MIN]]);
  assert.equal(kind(first!), "report");
  assert.equal(kind(again!), "none");
  const menu = screen({
    state: "limit_menu",
    rule: 'the limit menu, on "Upgrade your plan"',
    idle: false,
  });
  assert.equal(kind(run([[menu, T0 + 2 * 3600_000]])[0]!), "none");
});

Deno.test("the records lead when the banner has scrolled away; the screen still gates", async (t) => {
  const records: RecordSignal = {
    kind: "limited",
    at: T0,
    text: "You've hit your 5-hour limit · resets 3pm (UTC)",
    limitKind: "5-hour",
    resetAt: Date.parse("2026-11-30T15:00:00Z"),
    native: null,
    confirmed: true,
  };
  await t.step("an idle input box: resumed after the reset from resetsAt", () => {
    const [wait, due] = run([[screen(), T0, records], [screen(), T0 + 61 * MIN, records]]);
    assert.equal(kind(wait!), "wait");
    assert.deepEqual(wait!.shown, {
      state: "usage_limit",
      signal: "records",
      resetAt: records.resetAt,
    });
    assert.equal(kind(due!), "resume");
  });
  await t.step("a StopFailure the transcript does not confirm: the screen alone decides", () => {
    const alone = { ...records, confirmed: false };
    const [d] = run([[screen(), T0 + 2 * 3600_000, alone]]);
    assert.equal(kind(d!), "none");
    assert.equal(d!.shown.state, "normal");
  });
  await t.step("the same limit on screen and in the records: one episode, signal both", () => {
    const [both, scrolled] = run([[limited, T0, records], [screen(), T0 + 10 * MIN, records]]);
    assert.equal(both!.shown.signal, "both");
    assert.equal(scrolled!.state.first_seen_at, T0, "the banner scrolling away is not a new limit");
  });
  await t.step("a permission prompt on screen: refused", () => {
    const prompt = screen({
      state: "dangerous_prompt",
      rule: "a permission question",
      idle: false,
    });
    const d = run([[prompt, T0 + 2 * 3600_000, records]])[0]!;
    assert.equal(kind(d), "none");
    assert.equal(d.shown.state, "dangerous_prompt");
  });
  await t.step("a screen it cannot read with confidence: nothing typed, and it says why", () => {
    const unsure = screen({ confident: false, idle: false, input: null });
    const d = run([[unsure, T0 + 2 * 3600_000, records]])[0]!;
    assert.equal(kind(d), "refuse");
    assert.equal(
      reason(d),
      "the records say limited, but the screen cannot be read with confidence",
    );
  });
  await t.step("newer conversation in the records: the episode is over", () => {
    const d = run([[screen(), T0 + 2 * 3600_000, { kind: "working", at: T0 + MIN }]])[0]!;
    assert.equal(kind(d), "none");
    assert.equal(d.shown.state, "normal");
  });
});

Deno.test("a refusal holds until the screen changes; failures back off and give up after 3", () => {
  const [due] = run([[limited, T0 + 2 * 3600_000]]);
  const held = refused(due!.state, "a permission question on screen", "hash");
  assert.equal(kind(decide(held, [limited, T0 + 3 * 3600_000, null, "hash"])), "none");
  assert.equal(kind(decide(held, [limited, T0 + 3 * 3600_000, null, "other"])), "resume");
  let record = due!.state;
  for (let i = 1; i <= 3; i++) {
    record = afterAttempt(record, { ok: false, what: `try ${i}` }, { now: T0, maxAttempts: 3 });
  }
  assert.equal(record.gave_up, true);
  assert.deepEqual(record.tried, ["try 1", "try 2", "try 3"]);
  assert.match(
    reason(decide(record, [limited, T0 + 10 * 3600_000, null, "h2"])),
    /gave up after 3 attempts/,
  );
});

Deno.test("panes that reset together are staggered, each once, in a stable order", () => {
  const at = Date.parse("2026-11-30T15:01:00Z");
  const records = ["%3", "%1", "%2"].map((pane) => ({ ...newRecord(pane, "s"), resume_at: at }));
  const out = stagger(records, { staggerMs: 10_000, random: () => 0.5, now: at - 60_000 });
  const byPane = Object.fromEntries(out.map((r) => [r.pane, r.resume_at! - at]));
  assert.equal(byPane["%1"], 0);
  assert.ok(byPane["%2"]! >= 10_000 && byPane["%2"]! <= 11_000);
  assert.ok(byPane["%3"]! >= byPane["%2"]! + 10_000);
  assert.deepEqual(
    stagger(out, { staggerMs: 10_000, random: () => 0.5, now: at - 60_000 }),
    out,
    "already staggered: unchanged",
  );
});

Deno.test("resets that passed together are spaced from now, not from their past due time", () => {
  const at = Date.parse("2026-11-30T15:01:00Z");
  const now = at + 3600_000;
  const records = ["%1", "%2", "%3"].map((pane) => ({ ...newRecord(pane, "s"), resume_at: at }));
  const out = stagger(records, { staggerMs: 10_000, random: () => 0, now });
  assert.deepEqual(
    out.map((r) => r.resume_at! - now),
    [0, 10_000, 20_000].map((d, i) => i === 0 ? at - now : d),
  );
});

Deno.test("a limit back after the agent resumed is the same episode: its attempts go on counting", () => {
  const busy = screen({ state: "busy", rule: "busy (esc to interrupt)", idle: false });
  let record = run([[limited, T0]])[0]!.state;
  const said: string[] = [];
  for (let i = 0; i < 12; i++) {
    const at = T0 + (61 + i * 10) * MIN;
    const d = decide(record, [limited, at]);
    said.push(kind(d));
    if (kind(d) === "wait") {
      assert.match(reason(d), /the limit is still on after \d attempts?; next try at/);
    }
    record = kind(d) === "resume"
      ? afterAttempt(d.state, { ok: true, what: `try ${i + 1}` }, { now: at, maxAttempts: 3 })
      : d.state;
    record = decide(record, [busy, at + MIN]).state;
  }
  assert.equal(said.filter((k) => k === "resume").length, 3, said.join(" "));
  assert.equal(said.filter((k) => k === "report").length, 1, said.join(" "));
  assert.deepEqual(said.slice(said.indexOf("report") + 1).filter((k) => k !== "none"), []);
  assert.equal(record.gave_up, true);
});

Deno.test("a banner that goes away for good: a new limit later is a new episode", () => {
  const [, cleared] = run([[limited, T0], [screen(), T0 + MIN]]);
  assert.equal(cleared!.state.state, "normal");
  const later = screen({
    ...limited,
    banner: "You've hit your 5-hour limit · resets 9pm (UTC)",
    resetText: "resets 9pm (UTC)",
  });
  const next = decide(cleared!.state, [later, T0 + 5 * 3600_000]);
  assert.equal(next.state.first_seen_at, T0 + 5 * 3600_000);
  assert.equal(next.state.attempts, 0);
});
