import assert from "node:assert/strict";
import {
  parseResetPhrase,
  resetWindowMs,
  resolveReset,
  zonedToUtc,
} from "../lib/claude/reset_time.ts";

const FIVE_HOURS = resetWindowMs("5-hour");
const DAY = resetWindowMs("weekly");

function at(text: string, anchorIso: string, localZone = "UTC", windowMs = FIVE_HOURS) {
  const phrase = parseResetPhrase(text);
  if (!phrase) return "unparsed";
  const ms = resolveReset(phrase, { anchorMs: Date.parse(anchorIso), localZone, windowMs });
  return ms === null ? null : new Date(ms).toISOString();
}

Deno.test("every form of reference §4a parses", () => {
  assert.deepEqual(parseResetPhrase("resets 3pm"), { kind: "wall", hour: 15, minute: 0 });
  assert.deepEqual(parseResetPhrase("resets 3:30pm"), { kind: "wall", hour: 15, minute: 30 });
  assert.deepEqual(parseResetPhrase("resets 12:50am (America/Los_Angeles)"), {
    kind: "wall",
    hour: 0,
    minute: 50,
    zone: "America/Los_Angeles",
  });
  assert.deepEqual(parseResetPhrase("resets 12pm"), { kind: "wall", hour: 12, minute: 0 });
  assert.deepEqual(parseResetPhrase("resets Nov 20, 3pm (America/New_York)"), {
    kind: "wall",
    hour: 15,
    minute: 0,
    month: 11,
    day: 20,
    zone: "America/New_York",
  });
  assert.deepEqual(parseResetPhrase("Your limit will reset at 3pm (America/Bogota)."), {
    kind: "wall",
    hour: 15,
    minute: 0,
    zone: "America/Bogota",
  });
  assert.deepEqual(parseResetPhrase("Claude AI usage limit reached|1750708800"), {
    kind: "epoch",
    ms: 1750708800000,
  });
  assert.deepEqual(parseResetPhrase("5-hour limit reached · retrying in 4s (5:54pm)"), {
    kind: "wall",
    hour: 17,
    minute: 54,
  });
});

Deno.test("garbage is not a reset time", () => {
  for (
    const text of ["", "resets soon", "resets 13pm", "resets 3:75pm", "at 25:00", "pm 3", "~~~"]
  ) {
    assert.equal(parseResetPhrase(text), null, text);
  }
  assert.equal(at("resets 3pm (Mars/Olympus_Mons)", "2026-11-30T10:00:00Z"), null, "unknown zone");
});

Deno.test("a wall time is read in the banner's zone, not the watcher's", () => {
  // Watcher in Tokyo, banner in New York.
  assert.equal(
    at("resets 3pm (America/New_York)", "2026-11-30T17:00:00Z", "Asia/Tokyo"),
    "2026-11-30T20:00:00.000Z",
  );
  // No zone: the watcher's local zone.
  assert.equal(at("resets 3pm", "2026-11-30T03:00:00Z", "Asia/Tokyo"), "2026-11-30T06:00:00.000Z");
});

Deno.test("midnight rollover: the next occurrence after first sight, within the limit's window", () => {
  // 11:40pm in Los Angeles, "resets 12:50am": 70 minutes ahead, tomorrow's date.
  assert.equal(
    at("resets 12:50am (America/Los_Angeles)", "2026-12-01T07:40:00Z"),
    "2026-12-01T08:50:00.000Z",
  );
  // First seen just after midnight, "resets 10:30pm": 1 h 40 min ago, not 22 h ahead.
  assert.equal(
    at("resets 10:30pm (America/Los_Angeles)", "2026-12-01T08:10:00Z"),
    "2026-12-01T06:30:00.000Z",
  );
  // A weekly limit shown as a time is within 24 h: 23 h ahead is ahead.
  assert.equal(
    at("resets 11pm (UTC)", "2026-11-30T00:10:00Z", "UTC", DAY),
    "2026-11-30T23:00:00.000Z",
  );
});

Deno.test("zones ahead of and behind UTC", () => {
  // Auckland (UTC+13 in summer): 1pm local on Dec 1 is midnight UTC.
  assert.equal(
    at("resets 3pm (Pacific/Auckland)", "2026-11-30T23:00:00Z"),
    "2026-12-01T02:00:00.000Z",
  );
  assert.equal(
    at("resets 1am (Pacific/Auckland)", "2026-11-30T10:30:00Z"),
    "2026-11-30T12:00:00.000Z",
  );
  // Los Angeles (UTC-8 in winter).
  assert.equal(
    at("resets 9pm (America/Los_Angeles)", "2026-12-01T02:00:00Z"),
    "2026-12-01T05:00:00.000Z",
  );
});

Deno.test("daylight-saving days: the offset of the reset instant, not of the anchor", () => {
  // 2026-11-01: Los Angeles falls back at 2am PDT. Anchor 00:30 PDT, reset 3am PST.
  assert.equal(
    at("resets 3am (America/Los_Angeles)", "2026-11-01T07:30:00Z"),
    "2026-11-01T11:00:00.000Z",
  );
  // 2026-03-08: it springs forward at 2am. Anchor 11pm PST the day before, reset 3am PDT.
  assert.equal(
    at("resets 3am (America/Los_Angeles)", "2026-03-08T07:00:00Z"),
    "2026-03-08T10:00:00.000Z",
  );
  // The skipped hour moves forward with the clock.
  assert.equal(
    zonedToUtc({ year: 2026, month: 3, day: 8, hour: 2, minute: 30 }, "America/Los_Angeles"),
    Date.parse("2026-03-08T10:30:00Z"),
  );
  // Auckland's own change (2027-04-04, back to NZST) works the same.
  assert.equal(
    at("resets 4am (Pacific/Auckland)", "2027-04-03T12:00:00Z"),
    "2027-04-03T16:00:00.000Z",
  );
});

Deno.test("dates more than 24 h ahead, and the year", () => {
  assert.equal(
    at("resets Dec 3, 3pm (UTC)", "2026-11-30T10:00:00Z", "UTC", DAY),
    "2026-12-03T15:00:00.000Z",
  );
  assert.equal(
    at("resets Jan 2, 9am (Europe/Rome)", "2026-12-30T10:00:00Z", "UTC", DAY),
    "2027-01-02T08:00:00.000Z",
  );
  assert.equal(
    at("resets Nov 20, 2027, 3pm (UTC)", "2026-11-30T10:00:00Z", "UTC", DAY),
    "2027-11-20T15:00:00.000Z",
  );
});
