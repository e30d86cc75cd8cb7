import assert from "node:assert/strict";
import {
  parseResetPhrase,
  resetWindow,
  resolveReset,
  zonedToUtc,
} from "../lib/claude/reset_time.ts";

const FIVE_HOURS = resetWindow("5-hour");
const DAY = resetWindow("weekly");

function at(text: string, anchorIso: string, localZone = "UTC", window = FIVE_HOURS) {
  const phrase = parseResetPhrase(text);
  if (!phrase) return "unparsed";
  const ms = resolveReset(phrase, { anchorMs: Date.parse(anchorIso), localZone, window });
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
  // The hour the clocks repeat (1:00-2:00 on 2026-11-01 in Los Angeles) is taken at its later
  // occurrence, 1:30 PST, not 1:30 PDT an hour earlier: an hour too late, never an hour too soon.
  assert.equal(
    zonedToUtc({ year: 2026, month: 11, day: 1, hour: 1, minute: 30 }, "America/Los_Angeles"),
    Date.parse("2026-11-01T09:30:00Z"),
  );
  assert.equal(
    at("resets 1:30am (America/Los_Angeles)", "2026-11-01T07:00:00Z"),
    "2026-11-01T09:30:00.000Z",
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

Deno.test("limits other than the 5-hour one reset up to a day ahead; an unnamed one is read as either", async (t) => {
  const anchor = "2026-12-01T11:21:00Z";
  const rows: [string, string, string | null][] = [
    // Found by trying: these were read as yesterday's reset, typed into early, then given up on.
    ["extra usage", "You're out of extra usage · resets 8pm (UTC)", "2026-12-01T20:00:00.000Z"],
    ["monthly", "You've hit your monthly limit · resets 9pm (UTC)", "2026-12-01T21:00:00.000Z"],
    ["weekly", "You've hit your weekly limit · resets 9am (UTC)", "2026-12-02T09:00:00.000Z"],
    // Unnamed: a reset within the last 5 h is the 5-hour one that just passed; else ahead.
    ["unnamed, ahead", "You've hit your limit · resets 8pm (UTC)", "2026-12-01T20:00:00.000Z"],
    [
      "unnamed, just passed",
      "You've hit your limit · resets 11am (UTC)",
      "2026-12-01T11:00:00.000Z",
    ],
    [
      "5-hour, far ahead: passed",
      "You've hit your 5-hour limit · resets 8pm (UTC)",
      "2026-11-30T20:00:00.000Z",
    ],
  ];
  for (const [name, text, expected] of rows) {
    await t.step(name, () => {
      const kind = /extra/.test(text)
        ? "extra-usage"
        : /monthly/.test(text)
        ? "monthly"
        : /weekly/.test(text)
        ? "weekly"
        : /5-hour/.test(text)
        ? "5-hour"
        : "unnamed";
      assert.equal(at(text, anchor, "UTC", resetWindow(kind)), expected);
    });
  }
});

Deno.test("a zone is read as written, or the reset is not understood: never the local zone instead", async (t) => {
  const anchor = "2026-12-01T11:21:00Z";
  const rows: [string, string | null][] = [
    ["resets 8pm (EST5EDT)", "2026-12-02T01:00:00.000Z"],
    ["resets 8pm (UTC-05:00)", "2026-12-02T01:00:00.000Z"],
    ["resets 8pm (GMT+1)", "2026-12-01T19:00:00.000Z"],
    ["resets 8pm (UTC+0530)", "2026-12-01T14:30:00.000Z"],
    ["resets 8pm (GMT)", "2026-12-01T20:00:00.000Z"],
    ["resets 3pm (Mars/Olympus_Mons)", null],
  ];
  for (const [text, expected] of rows) {
    await t.step(text, () => assert.equal(at(text, anchor, "Asia/Tokyo", DAY), expected));
  }
});

Deno.test("a date written day first (12 Dec, 3pm) is that date, not today", () => {
  assert.equal(
    at("resets 12 Dec, 3pm (UTC)", "2026-12-01T11:21:00Z", "UTC", DAY),
    "2026-12-12T15:00:00.000Z",
  );
  assert.equal(
    at("resets 2 Jan at 9:30am", "2026-12-30T11:00:00Z", "UTC", DAY),
    "2027-01-02T09:30:00.000Z",
  );
});

Deno.test("a day named before the time is not dropped: the reset is not understood", () => {
  for (const text of ["resets tomorrow at 3pm", "resets Monday 3pm", "resets Fri, 9:30am (UTC)"]) {
    assert.equal(parseResetPhrase(text), null, text);
  }
  // A day word elsewhere in the line, or a date, is no such day.
  assert.deepEqual(parseResetPhrase("Sunday run: resets 3pm (UTC)"), {
    kind: "wall",
    hour: 15,
    minute: 0,
    zone: "UTC",
  });
  assert.equal(parseResetPhrase("resets Mon Dec 7, 3pm")?.kind, "wall");
});
