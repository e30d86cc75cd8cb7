// The survey hook crash makes of every session keeps what it found in .lifeline/survey.json, so
// that the next one reads only what changed. What it finds must be exactly what a survey without
// it finds, whatever happened to the files in between: checked on random histories of real files.
import assert from "node:assert/strict";
import fc from "fast-check";
import { SETTLE_MS, type Survey, surveySessions } from "../lib/sessions/survey.ts";
import { withTempDir } from "./helpers/temp.ts";

const RUNS = Number(Deno.env.get("LIFELINE_PROPERTY_RUNS") ?? 40);

/** A survey as plain data, names sorted. */
function plain(survey: Survey) {
  return {
    skipped: survey.skipped,
    sessions: survey.sessions.map((s) => ({ ...s, names: [...s.names].sort() })),
  };
}

/**
 * The survey with the kept one, and the survey a first look makes (without it), of the same files.
 * `now` is late enough for every file time to count as settled, so the kept survey is used.
 */
async function bothSurveys(root: string) {
  const cache = `${root}/.lifeline/survey.json`;
  const kept = await Deno.readFile(cache).catch(() => undefined);
  await Deno.remove(cache).catch(() => {});
  const now = Date.now() + SETTLE_MS + 60_000;
  const fresh = await surveySessions(root, { now });
  if (kept) await Deno.writeFile(cache, kept);
  else await Deno.remove(cache).catch(() => {});
  return { cached: await surveySessions(root, { now }), fresh };
}

const IDS = ["s1", "s2", "s3"] as const;
const LOOPS = [
  JSON.stringify({ active: true, last_checked_at: 1_700_000_000 }),
  JSON.stringify({ active: true, last_checked_at: 1_700_000_001 }), // same size, other time
  JSON.stringify({ active: false, last_checked_at: 1_700_000_000 }),
  JSON.stringify({ active: true }),
  '{"active": true, "last_checked_at": "2026-01-01T00:00:00Z"}',
  "not json",
  "[1]",
];

type Step =
  | { kind: "loop in place" | "loop replaced"; id: string; text: string }
  | { kind: "remove"; id: string; name: string }
  | { kind: "status"; id: string; word: string }
  | { kind: "mark" | "heartbeat" | "handoffs" | "session gone" | "loop link"; id: string }
  | { kind: "survey" };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constantFrom("loop in place" as const, "loop replaced" as const),
    id: fc.constantFrom(...IDS),
    text: fc.constantFrom(...LOOPS),
  }),
  fc.record({
    kind: fc.constant("remove" as const),
    id: fc.constantFrom(...IDS),
    name: fc.constantFrom("ralph.json", "status", "finished", "heartbeat"),
  }),
  fc.record({
    kind: fc.constant("status" as const),
    id: fc.constantFrom(...IDS),
    word: fc.constantFrom("ended", "scavenged", "alive"),
  }),
  fc.record({
    kind: fc.constantFrom(
      "mark" as const,
      "heartbeat" as const,
      "handoffs" as const,
      "session gone" as const,
      "loop link" as const,
    ),
    id: fc.constantFrom(...IDS),
  }),
  fc.constant({ kind: "survey" as const }),
);

async function apply(root: string, s: Step): Promise<void> {
  if (s.kind === "survey") return;
  const dir = `${root}/sessions/${s.id}`;
  await Deno.mkdir(dir, { recursive: true });
  switch (s.kind) {
    case "loop in place":
      await Deno.remove(`${dir}/ralph.json`).catch(() => {}); // a link left by "loop link"
      await Deno.writeTextFile(`${dir}/ralph.json`, s.text);
      break;
    case "loop replaced":
      await Deno.writeTextFile(`${dir}/.ralph.tmp`, s.text);
      await Deno.rename(`${dir}/.ralph.tmp`, `${dir}/ralph.json`);
      break;
    case "loop link":
      await Deno.remove(`${dir}/ralph.json`).catch(() => {});
      await Deno.symlink(`${root}/elsewhere.json`, `${dir}/ralph.json`);
      break;
    case "remove":
      await Deno.remove(`${dir}/${s.name}`).catch(() => {});
      break;
    case "status":
      await Deno.writeTextFile(`${dir}/status`, `${s.word}\n`);
      break;
    case "mark":
      await Deno.writeTextFile(`${dir}/finished`, "ended\n");
      break;
    case "heartbeat":
      await Deno.writeTextFile(`${dir}/heartbeat`, `${Math.floor(Date.now() / 1000)}\n`);
      break;
    case "handoffs":
      await Deno.mkdir(`${dir}/handoffs`, { recursive: true });
      break;
    case "session gone":
      await Deno.remove(dir, { recursive: true });
      break;
  }
}

Deno.test("property: the kept survey finds exactly what a first look finds, whatever changed", async () => {
  await withTempDir(async (base) => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const root = `${base}/run-${run++}`;
        await Deno.mkdir(`${root}/sessions`, { recursive: true });
        await Deno.writeTextFile(`${root}/elsewhere.json`, LOOPS[0]!);
        for (const s of [...steps, { kind: "survey" as const }]) {
          await apply(root, s);
          if (s.kind !== "survey") continue;
          const { cached, fresh } = await bothSurveys(root);
          assert.deepEqual(plain(cached), plain(fresh));
          // Later changes get later times than the ones kept (the real clock moves on).
          await new Promise((resolve) => setTimeout(resolve, 3));
        }
      }),
      { numRuns: RUNS },
    );
  });
});

Deno.test("a session is kept only once its times have settled", async () => {
  await withTempDir(async (root) => {
    const dir = `${root}/sessions/s1`;
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/ralph.json`, LOOPS[0]!);
    const cache = `${root}/.lifeline/survey.json`;
    await surveySessions(root, { now: Date.now() });
    const early = JSON.parse(await Deno.readTextFile(cache).catch(() => '{"sessions": {}}'));
    assert.deepEqual(early.sessions, {}, "a file written just now is read again next time");

    const later = Date.now() + SETTLE_MS + 1000;
    await surveySessions(root, { now: later });
    const kept = JSON.parse(await Deno.readTextFile(cache));
    assert.deepEqual(Object.keys(kept.sessions), ["s1"]);
    assert.equal(kept.sessions.s1.loop.lastCheckedAt, 1_700_000_000);
  });
});

Deno.test("a kept survey that is not one lifeline wrote is ignored", async () => {
  await withTempDir(async (root) => {
    await Deno.mkdir(`${root}/sessions/s1`, { recursive: true });
    await Deno.writeTextFile(`${root}/sessions/s1/ralph.json`, LOOPS[0]!);
    await Deno.mkdir(`${root}/.lifeline`);
    const now = Date.now() + SETTLE_MS + 1000;
    const bad = [
      "",
      "not json",
      "null",
      '{"version": "1", "sessions": {}}',
      '{"version": "2", "sessions": 1}',
      '{"version": "2", "sessions": {"s1": {"dir": 1, "names": ""}}}',
      '{"version": "2", "sessions": {"s1": null}}',
      '{"version": "2", "sessions": {"s1": {"dir": "x", "names": "", "loop": "x"}}}',
    ];
    for (const text of bad) {
      await Deno.writeTextFile(`${root}/.lifeline/survey.json`, text);
      const survey = await surveySessions(root, { now });
      assert.equal(survey.sessions[0]!.loop?.parsed, true, text);
    }
  });
});
