// The one liveness judgement (lib/sessions/stale_policy.ts), row by row.
import assert from "node:assert/strict";
import {
  decideSession,
  type SessionLifecycle,
  type SessionObservation,
} from "../lib/sessions/stale_policy.ts";

const NOW = Date.UTC(2026, 10, 30, 12);
const S = Math.floor(NOW / 1000);
const DAY = 86_400;
const OPTIONS = { now: NOW, staleAfterSeconds: 300, pruneAfterSeconds: 7 * DAY };

/** Decides with every fact given at once (so no `learn` is left). */
function judge(lifecycle: SessionLifecycle, seen: SessionObservation, options = OPTIONS) {
  return decideSession(lifecycle, { registered: true, ...seen }, options);
}

Deno.test("each state, from its facts", async (t) => {
  const rows: [string, SessionLifecycle, SessionObservation, string, string[]][] = [
    ["fresh heartbeat", { status: "" }, { heartbeat: S - 10 }, "alive", []],
    [
      "stale, agent alive, pane gone: the process wins",
      { status: "" },
      { heartbeat: S - 900, host: { pane: "gone", process: "alive" } },
      "alive",
      [],
    ],
    [
      "stale, pane gone, process unknown",
      { status: "" },
      { heartbeat: S - 900, host: { pane: "gone", process: "unknown" } },
      "dead",
      ["scavenge"],
    ],
    [
      "stale, tmux unreachable, no process",
      { status: "" },
      { heartbeat: S - 900, host: { pane: "unknown", process: "unknown" } },
      "unknown",
      [],
    ],
    [
      "stale, pid reused",
      { status: "" },
      { heartbeat: S - 900, host: { pane: "present", process: "reused" } },
      "dead",
      ["scavenge"],
    ],
    [
      "scavenged, heartbeat 'fresh' to a judge with another limit: still scavenged",
      { status: "scavenged", delivered: false },
      { heartbeat: S - 100 },
      "scavenged",
      [],
    ],
    [
      "scavenged and delivered a day ago",
      { status: "scavenged", delivered: true, statusChangedMs: NOW - DAY * 1000 },
      { heartbeat: S - DAY },
      "scavenged",
      [],
    ],
    [
      "scavenged and delivered 8 days ago",
      { status: "scavenged", delivered: true, statusChangedMs: NOW - 8 * DAY * 1000 },
      { heartbeat: S - 8 * DAY },
      "scavenged",
      ["prune"],
    ],
    [
      "ended 8 days ago but its heartbeat is fresh",
      { status: "ended", statusChangedMs: NOW - 8 * DAY * 1000 },
      { heartbeat: S - 5 },
      "ended",
      [],
    ],
    [
      "no registry, no heartbeat",
      { status: "" },
      { heartbeat: null, registered: false },
      "unregistered",
      [],
    ],
  ];
  for (const [name, lifecycle, seen, state, actions] of rows) {
    await t.step(name, () => {
      const decided = judge(lifecycle, seen);
      assert.equal(decided.state.state, state, decided.state.reason);
      assert.deepEqual(decided.actions.map((a) => a.kind), actions);
    });
  }
});

Deno.test("facts are asked for only as they are needed", async (t) => {
  await t.step("a delivered, marked session needs nothing but its mark's time", () => {
    const decided = decideSession(
      { status: "scavenged", delivered: true, statusChangedMs: NOW - DAY * 1000 },
      {},
      OPTIONS,
    );
    assert.equal(decided.state.finished, true);
    assert.deepEqual(decided.actions, []);
  });
  await t.step("without pruning, a finished session needs nothing more", () => {
    const decided = decideSession({ status: "ended" }, {}, { now: NOW, staleAfterSeconds: 300 });
    assert.deepEqual(decided.actions, []);
  });
  await t.step("a session without a status needs its heartbeat, then its host", () => {
    const first = decideSession({ status: "" }, {}, OPTIONS);
    assert.deepEqual(first.actions, [{ kind: "learn", facts: ["heartbeat"] }]);
    const second = decideSession({ status: "" }, { heartbeat: S - 900, registered: true }, OPTIONS);
    assert.deepEqual(second.actions, [{ kind: "learn", facts: ["host"] }]);
  });
  await t.step("a fresh session needs no host", () => {
    const decided = decideSession({ status: "" }, { heartbeat: S, registered: true }, OPTIONS);
    assert.deepEqual(decided.actions, []);
  });
});
