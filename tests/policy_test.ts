import assert from "node:assert/strict";
import {
  BUILTIN_FALLBACKS,
  findFallback,
  globMatches,
  parseFallbackMap,
} from "../lib/advice/fallback_map.ts";
import type { TurnOutcome } from "../lib/claude/transcript.ts";
import { backoffSeconds, decideMcpFailure } from "../lib/advice/mcp_retry_policy.ts";
import {
  classifyApiError,
  decideTurn,
  emptyTracker,
  ladderRung,
  type TrackerState,
} from "../lib/advice/model_fallback_policy.ts";
import { renderModelAdvice } from "../lib/advice/model_fallback.ts";
import {
  type ClaimDecision,
  type ClaimEvidence,
  deactivation,
  decideClaim,
  decideLoopState,
  parseClaimOwner,
  parseTimestamp,
} from "../lib/sessions/crash_recovery_policy.ts";
import { outcomesFromRows } from "../lib/claude/transcript.ts";
import { transcriptPath } from "./helpers/fixtures.ts";

const MCP = { baseSeconds: 1, maxAttempts: 5, jitter: 0.25 };
const mcpAt = (now: number, random: number) => ({ now, random: () => random, ...MCP });
const MODEL = { threshold: 3, ladder: ["haiku", "sonnet", "opus"] };
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

Deno.test("MCP backoff: 1, 2, 4, 8, 16 s for attempts 1-5, then fallback from the 6th on", () => {
  assert.deepEqual([1, 2, 3, 4, 5].map((n) => backoffSeconds(n, 1)), [1, 2, 4, 8, 16]);
  let state;
  const advice = [];
  for (let i = 0; i < 8; i++) {
    const step = decideMcpFailure(state, { reason: "ECONNREFUSED" }, mcpAt(NOW + i * 1000, 0.5));
    state = step.state;
    advice.push(...step.actions.map((a) => a.advice));
  }
  assert.deepEqual(advice.slice(0, 5).map((a) => a.kind === "retry" && a.waitSeconds), [
    1,
    2,
    4,
    8,
    16,
  ]);
  assert.deepEqual(advice.slice(5).map((a) => [a.kind, a.attempt]), [
    ["fallback", 6],
    ["fallback", 7],
    ["fallback", 8],
  ]);
  assert.equal(state!.attempt, 8);
});

Deno.test("MCP retry state: next_retry_at has up to 25% jitter taken off, never added", () => {
  const now = NOW / 1000;
  const noJitter = decideMcpFailure({ attempt: 2, last_attempt_ts: now, next_retry_at: 0 }, {
    reason: "EPIPE",
  }, mcpAt(NOW, 0));
  assert.equal(noJitter.state.next_retry_at, now + 4);
  const most = decideMcpFailure({ attempt: 2, last_attempt_ts: now, next_retry_at: 0 }, {
    reason: "EPIPE",
  }, mcpAt(NOW, 0.999));
  assert.ok(most.state.next_retry_at >= now + 3 && most.state.next_retry_at < now + 4);
  assert.equal(most.state.last_attempt_ts, now);
});

function fail(key: string, at: number, error = "server_error", message?: string): TurnOutcome {
  return { kind: "api_error", key, at, error, message };
}

/** A tracker that knows the session's model. */
function withModel(model: string): TrackerState {
  return decideTurn(emptyTracker(), { kind: "model", model }, { now: NOW, ...MODEL }).state;
}

function run(outcomes: TurnOutcome[], start: TrackerState = emptyTracker()) {
  let state = start;
  const advice: (string | null)[] = [];
  for (const outcome of outcomes) {
    const step = decideTurn(state, outcome, { now: NOW, ...MODEL });
    state = step.state;
    advice.push(step.actions.map((a) => renderModelAdvice(a.advice))[0] ?? null);
  }
  return { state, advice };
}

Deno.test("model fallback: advice at exactly 3 consecutive counted failures, up the ladder", () => {
  const sonnet = withModel("claude-sonnet-5");
  const { state, advice } = run([fail("a", 1), fail("b", 2), fail("c", 3)], sonnet);
  assert.deepEqual(advice.slice(0, 2), [null, null]);
  assert.match(
    advice[2]!,
    /^\[MODEL FALLBACK\] 3 turns in a row .* on sonnet .* Switch to opus: run \/model opus/,
  );
  assert.equal(state.consecutive_failures, 3);
  assert.equal(state.last_error, "server_error");
});

Deno.test("model fallback: the top of the ladder advises waiting or another provider", () => {
  const opus = withModel("claude-opus-5-5");
  const { advice } = run([fail("a", 1, "overloaded"), fail("b", 2), fail("c", 3)], opus);
  assert.match(advice[2]!, /on opus, the strongest model .* Wait a few minutes .* switch provider/);
});

Deno.test("model fallback: an unknown model gets general advice", () => {
  const { advice } = run([fail("a", 1), fail("b", 2), fail("c", 3)]);
  assert.match(advice[2]!, /Switch to a stronger model than the current one \(\/model\)/);
});

Deno.test("model fallback: a success resets; an error is counted once whatever path saw it", () => {
  const { state } = run([
    fail("a", 1),
    fail("b", 2),
    { kind: "success", at: 3 },
    fail("c", 4),
    fail("c", 4),
  ]);
  assert.equal(state.consecutive_failures, 1);
  // A failure that arrives late but happened before a known success does not count.
  const late = run([{ kind: "success", at: 10 }, fail("old", 5)]);
  assert.equal(late.state.consecutive_failures, 0);
  // A success that arrives late still resets only what came before it.
  const ordered = run([fail("a", 1), fail("b", 3), { kind: "success", at: 2 }]);
  assert.equal(ordered.state.consecutive_failures, 1);
});

Deno.test("model fallback: a rate limit never counts and says to wait, not to switch", () => {
  const { state, advice } = run([
    fail("a", 1),
    fail("b", 2),
    fail("r", 3, "rate_limit", "You've hit your 5-hour limit · resets 5:49pm (UTC)"),
  ]);
  assert.equal(state.consecutive_failures, 2);
  assert.match(
    advice[2]!,
    /^\[RATE LIMIT\] .* \(it resets 5:49pm \(UTC\)\)\. Wait for the reset.*Do not switch model/,
  );
  const again = decideTurn(state, fail("r", 3, "rate_limit"), { now: NOW, ...MODEL });
  assert.deepEqual(again.actions, [], "one error, one advice");
});

Deno.test("model fallback: permanent errors never count and say to stop and tell the user", () => {
  for (
    const [error, message] of [
      ["authentication_failed", "Please run /login"],
      ["billing_error", ""],
      ["oauth_org_not_allowed", ""],
      ["account_on_hold", ""],
      ["verification_required", ""],
      ["invalid_request", "Prompt is too long"],
    ]
  ) {
    assert.equal(classifyApiError(error!, message), "permanent", error);
    const { state, advice } = run([fail("x", 1, error, message)]);
    assert.equal(state.consecutive_failures, 0);
    assert.match(advice[0]!, /^\[API ERROR\] .*Do not retry; stop and tell the user/);
  }
  assert.equal(classifyApiError("invalid_request", "bad tool schema"), "other");
  assert.equal(classifyApiError("server_error"), "counted");
  assert.equal(classifyApiError("overloaded"), "counted");
});

Deno.test("ladderRung reads model ids", () => {
  const ladder = MODEL.ladder;
  assert.equal(ladderRung("claude-opus-5-5", ladder), "opus");
  assert.equal(ladderRung("claude-3-5-haiku-latest", ladder), "haiku");
  assert.equal(ladderRung("Sonnet 5.5", ladder), "sonnet");
  assert.equal(ladderRung("gpt-9", ladder), null);
  assert.equal(ladderRung(null, ladder), null);
});

Deno.test("timestamps: epoch seconds, epoch milliseconds and ISO, as numbers or strings", () => {
  assert.deepEqual(parseTimestamp(1796040000), { ms: 1796040000000, form: "seconds" });
  assert.deepEqual(parseTimestamp(1796040000123), { ms: 1796040000123, form: "milliseconds" });
  assert.deepEqual(parseTimestamp("1796040000"), { ms: 1796040000000, form: "seconds" });
  assert.deepEqual(parseTimestamp("2026-11-30T10:00:00Z"), {
    ms: Date.UTC(2026, 10, 30, 10),
    form: "iso",
  });
  for (const bad of [null, undefined, "", "yesterday", -5, {}, NaN]) {
    assert.equal(parseTimestamp(bad), null, String(bad));
  }
});

Deno.test("loop state: active and older than 7200 s is stale; everything else is kept", () => {
  const stale = decideLoopState(
    { active: true, last_checked_at: NOW / 1000 - 7201 },
    null,
    NOW,
    7200,
  );
  assert.deepEqual(stale, { action: "deactivate", ageSeconds: 7201, basis: "last_checked_at" });
  assert.equal(
    decideLoopState({ active: true, last_checked_at: NOW - 7_000_000 }, null, NOW, 7200).action,
    "keep",
  );
  assert.equal(
    decideLoopState({ active: false, last_checked_at: 1 }, null, NOW, 7200).action,
    "keep",
  );
  const byFileTime = decideLoopState({ active: true }, NOW - 8000_000, NOW, 7200);
  assert.equal(byFileTime.action === "deactivate" && byFileTime.basis, "file time");
  const state = { active: true, last_checked_at: 1796040000, iteration: 9, tasks: [{ id: 1 }] };
  assert.deepEqual(deactivation(state, NOW), {
    active: false,
    deactivation_reason: "stale",
    deactivated_at: NOW / 1000,
  });
  assert.equal(
    deactivation({ active: true, last_checked_at: "2026-01-01T00:00:00Z" }, NOW).deactivated_at,
    new Date(NOW).toISOString(),
  );
});

Deno.test("claim locks: owner formats, and the decision", () => {
  assert.deepEqual(parseClaimOwner('{"pid": 42, "host": "box"}'), { pid: 42, host: "box" });
  assert.deepEqual(parseClaimOwner('{"owner_pid": 7}'), { pid: 7 });
  assert.deepEqual(parseClaimOwner("1234"), { pid: 1234 });
  assert.deepEqual(parseClaimOwner("1234@box\n"), { pid: 1234, host: "box" });
  assert.deepEqual(parseClaimOwner("session=abc\npid=99\nhost=box"), { pid: 99, host: "box" });
  assert.deepEqual(parseClaimOwner("locked by someone"), {});
});

Deno.test("claim locks: deleted only when old and the owner is known dead, or none recorded and no lock held", async (t) => {
  const min = 60_000;
  const settings = { thisHost: "box", staleMinutes: 15 };
  const old = { ageMs: 16 * min, lockHeld: false } as const;
  const none = { owner: {}, ownerState: "not checked" } as const;
  const rows: [string, ClaimEvidence, ClaimDecision][] = [
    ["fresh", { ...old, ...none, ageMs: 14 * min }, { action: "keep", reason: "fresh" }],
    ["no owner, no lock", { ...old, ...none }, { action: "delete", reason: "no owner recorded" }],
    [
      "no owner, held with flock",
      { ...old, ...none, lockHeld: true },
      { action: "keep", reason: "lock held" },
    ],
    [
      "no owner, lock cannot be checked",
      { ...old, ...none, lockHeld: "unknown" },
      { action: "keep", reason: "lock unknown" },
    ],
    [
      "owner dead",
      { ...old, owner: { pid: 1 }, ownerState: "dead" },
      { action: "delete", reason: "owner gone" },
    ],
    [
      "owner's pid now another program",
      { ...old, owner: { pid: 1 }, ownerState: "reused" },
      { action: "delete", reason: "owner gone" },
    ],
    [
      "owner alive",
      { ...old, owner: { pid: 1 }, ownerState: "alive" },
      { action: "keep", reason: "owner alive" },
    ],
    [
      "owner cannot be checked (Windows, no ps)",
      { ...old, owner: { pid: 1 }, ownerState: "unknown" },
      { action: "keep", reason: "owner unknown" },
    ],
    [
      "owner dead but the lock is held",
      { ...old, owner: { pid: 1 }, ownerState: "dead", lockHeld: true },
      { action: "keep", reason: "lock held" },
    ],
    [
      "owner on another host",
      { ...old, owner: { pid: 1, host: "other" }, ownerState: "dead" },
      { action: "keep", reason: "owner on another host" },
    ],
  ];
  for (const [name, claim, decision] of rows) {
    await t.step(name, () => assert.deepEqual(decideClaim(claim, settings), decision));
  }
});

Deno.test("fallback map: tables and lists, exact names before patterns, bad lines ignored", () => {
  const entries = parseFallbackMap(`# Fallback tools

| tool | fallback | what the fallback cannot do |
| --- | --- | --- |
| mcp__firecrawl__scrape | WebFetch | no JavaScript rendering |
| \`mcp__github__*\` | Bash: gh | needs the gh CLI |
| broken row |

- mcp__puppeteer__screenshot -> Bash: chromium --headless (no interaction)
- mcp__x__y → Read
* not a mapping
`);
  assert.deepEqual(entries, [
    { tool: "mcp__firecrawl__scrape", fallback: "WebFetch", limits: "no JavaScript rendering" },
    { tool: "mcp__github__*", fallback: "Bash: gh", limits: "needs the gh CLI" },
    {
      tool: "mcp__puppeteer__screenshot",
      fallback: "Bash: chromium --headless",
      limits: "no interaction",
    },
    { tool: "mcp__x__y", fallback: "Read", limits: "" },
  ]);
  assert.equal(findFallback(entries, "mcp__github__create_issue")?.fallback, "Bash: gh");
  assert.equal(findFallback(entries, "mcp__firecrawl__crawl"), undefined);
  assert.equal(findFallback(BUILTIN_FALLBACKS, "Edit")?.tool, "Edit");
  assert.deepEqual(parseFallbackMap("\u0000garbage|||\n| | |"), []);
});

Deno.test("fallback map globs: `*` is any run of characters, matched without backtracking", async (t) => {
  const rows: [string, string, boolean][] = [
    ["mcp__github__*", "mcp__github__create_issue", true],
    ["mcp__*__create_*", "mcp__gitlab__create_mr", true],
    ["*", "", true],
    ["mcp__github__*", "mcp__gitlab__x", false],
    ["a*b", "a", false],
    ["Edit", "Edit", true],
  ];
  for (const [glob, tool, expected] of rows) {
    await t.step(
      `${glob} ~ ${tool || '""'}`,
      () => assert.equal(globMatches(glob, tool), expected),
    );
  }
  await t.step("a glob of 30 stars against 200 characters is answered at once", () => {
    const started = performance.now();
    assert.equal(globMatches("a*".repeat(30) + "b", "a".repeat(200)), false);
    assert.ok(performance.now() - started < 50);
  });
});

Deno.test("transcript: API-error rows become failures keyed by their prompt, replies successes", async () => {
  const lines = (await Deno.readTextFile(transcriptPath("screen-529"))).split("\n");
  const { outcomes, model } = outcomesFromRows(lines);
  assert.deepEqual(outcomes.map((o) => o.kind === "api_error" ? [o.key, o.error] : o.kind), [
    ["f968a62e-9e89-41ef-8b5a-06be3054fad3", "server_error"],
  ]);
  assert.equal(model, null, "the synthetic row is not a model");
  const ok = outcomesFromRows((await Deno.readTextFile(transcriptPath("hh-tool-ok"))).split("\n"));
  assert.ok(ok.outcomes.every((o) => o.kind === "success"));
  assert.equal(ok.outcomes.length, 3);
  const limited = outcomesFromRows(
    (await Deno.readTextFile(transcriptPath("screen-429-oauth"))).split("\n"),
  );
  assert.equal(
    limited.outcomes[0]?.kind === "api_error" && limited.outcomes[0].error,
    "rate_limit",
  );
});
