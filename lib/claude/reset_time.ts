/**
 * Reset times in limit banners (reference §4a): `3pm`, `3:30pm`, `12:50am`, `Nov 20, 3pm`,
 * `Sep 1 at 12:00am`, `17:54`, each with or without `(IANA/Zone)`; the old raw `…|1750708800`;
 * and relative ones (`resets in 2h 14m`, `(resets 1h 13m)`, `try again in 5 minutes`). A wall
 * time is read in the banner's zone (the local zone when it names none); every reset is anchored
 * to when the banner was first seen, which fixes what other resumers got wrong (reference §8):
 * the midnight rollover, zones ahead of UTC, the ignored zone, and daylight-saving days. Pure.
 *
 * @module
 */

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/** A reset as the banner wrote it. */
export type ResetPhrase =
  | { kind: "epoch"; ms: number }
  /** `resets in 2h 14m`, `(resets 1h 13m)`, `try again in 5 minutes`: from when it was first seen. */
  | { kind: "relative"; ms: number }
  | {
    kind: "wall";
    hour: number;
    minute: number;
    /** 1-12, with `day`, when the banner gave a date (resets more than 24 h away). */
    month?: number;
    day?: number;
    year?: number;
    zone?: string;
  };

const MONTH = "(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\\.?";
/** `Nov 20, 3pm`, `20 Nov, 3pm` (a day-first locale), `Sep 1 at 12:00am`, `3:30pm (Zone)`. */
const WALL = new RegExp(
  String.raw`(?:(?:\b${MONTH}\s+(\d{1,2})|\b(\d{1,2})\s+${MONTH}),?\s+` +
    String.raw`(?:(\d{4}),?\s+)?(?:at\s+)?)?\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?\b` +
    String.raw`(?:\s*\(([^()\n]{1,40})\))?`,
  "i",
);

/**
 * A duration after `resets`, `reset in` or `try again in`: `2h 14m`, `30m`, `5 minutes`, `1d 3h`.
 * "retrying in 4s" is the client's own retry, not a reset, and is not matched.
 */
const RELATIVE = new RegExp(
  String.raw`\b(?:resets?|try again)(?: in)? ` +
    String.raw`(?=\d)(?:(\d{1,3}) ?d(?:ays?)?\b ?)?(?:(\d{1,3}) ?h(?:ours?|rs?)?\b ?)?` +
    String.raw`(?:(\d{1,4}) ?m(?:in(?:ute)?s?)?\b ?)?(?:(\d{1,5}) ?s(?:ec(?:ond)?s?)?\b)?`,
  "i",
);

/** A 24-hour time after `resets`/`at` (`resets 17:54`), for builds or locales that write one. */
const WALL_24H = /\b(?:resets?|reset at|at) (?:at )?([01]?\d|2[0-3]):([0-5]\d)\b(?!\s*[ap]\.?m)/i;

/** A day word that ends right before a time: `tomorrow at `, `Monday, `. */
const DAY_WORD =
  /\b(?:tomorrow|(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?)\.?,?\s+(?:at\s+)?\S?$/i;

/** Finds the reset in a banner line, or null when there is none it can read. */
export function parseResetPhrase(text: string): ResetPhrase | null {
  const epoch = /\|(\d{10,13})\b/.exec(text);
  if (epoch) {
    const n = Number(epoch[1]);
    return { kind: "epoch", ms: n < 1e12 ? n * 1000 : n };
  }
  const relative = RELATIVE.exec(text);
  if (relative && relative.slice(1).some((part) => part !== undefined)) {
    const [days, hours, minutes, seconds] = relative.slice(1).map((part) => Number(part ?? 0));
    return {
      kind: "relative",
      ms: ((days! * 24 + hours!) * 60 + minutes!) * 60_000 + seconds! * 1000,
    };
  }
  const match = WALL.exec(text) ?? wall24(text);
  if (!match) return null;
  const [, monthFirst, dayAfter, dayFirst, monthAfter, year, hour12, minute, half, zone] = match;
  // A day named before the time ("tomorrow at 3pm", "Monday 3pm") is one this reading would
  // drop, and take the next 3pm instead, days early for a weekly limit: not understood.
  if (!monthFirst && !monthAfter && DAY_WORD.test(text.slice(0, match.index + 1))) return null;
  const monthName = monthFirst ?? monthAfter;
  const day = dayAfter ?? dayFirst;
  const hour = Number(hour12);
  const minutes = minute === undefined ? 0 : Number(minute);
  if (hour < 1 || hour > 12 || minutes > 59) return null;
  const phrase: ResetPhrase = {
    kind: "wall",
    hour: (hour % 12) + (half!.toLowerCase() === "p" ? 12 : 0),
    minute: minutes,
  };
  if (monthName && day) {
    phrase.month = MONTHS.indexOf(monthName.toLowerCase()) + 1;
    phrase.day = Number(day);
    if (year) phrase.year = Number(year);
  }
  if (zone) phrase.zone = zone;
  return phrase;
}

/** A 24-hour time as a match shaped like {@linkcode WALL}'s (no date, no zone). */
function wall24(text: string): RegExpExecArray | null {
  const match = WALL_24H.exec(text);
  if (!match) return null;
  const hour = Number(match[1]);
  const shaped = Object.assign([
    match[0],
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    String(hour % 12 === 0 ? 12 : hour % 12),
    match[2],
    hour >= 12 ? "p" : "a",
    /^\s*\(([^()\n]{1,40})\)/.exec(text.slice(match.index + match[0].length))?.[1],
  ], { index: match.index, input: text }) as unknown as RegExpExecArray;
  return shaped;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * A fixed offset as banners and locales write one: `UTC`, `GMT`, `UTC-05:00`, `GMT+1`, `UTC+0530`;
 * its offset east of UTC in ms, or undefined when `zone` is not one.
 */
export function fixedOffsetMs(zone: string): number | undefined {
  const match = /^(?:UTC|GMT)(?:\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?)?$/i.exec(zone.trim());
  if (!match) return undefined;
  if (!match[1]) return 0;
  const hours = Number(match[2]);
  const minutes = Number(match[3] ?? 0);
  if (hours > 14 || minutes > 59) return undefined;
  return (match[1] === "-" ? -1 : 1) * (hours * 60 + minutes) * 60_000;
}

/** True when `zone` is an IANA zone this runtime knows, or a fixed offset. */
export function isKnownZone(zone: string): boolean {
  if (fixedOffsetMs(zone) !== undefined) return true;
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall clock of `utcMs` in `zone`. */
export function wallClock(utcMs: number, zone: string) {
  const fixed = fixedOffsetMs(zone);
  const parts: Record<string, number> = {};
  const [f, at] = fixed === undefined
    ? [formatter(zone), utcMs]
    : [formatter("UTC"), utcMs + fixed];
  for (const part of f.formatToParts(at)) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour! % 24,
    minute: parts.minute!,
    second: parts.second!,
  };
}

/** The zone's offset from UTC at `utcMs`, in milliseconds (east positive). */
function offsetMs(utcMs: number, zone: string): number {
  const w = wallClock(utcMs, zone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(utcMs / 1000) * 1000;
}

/**
 * The UTC instant of a wall time in `zone`. The offset is the one in force at that instant, so
 * 3pm is right on either side of a daylight-saving change. A repeated time (the hour the clock
 * falls back) is its first occurrence; a skipped time moves forward with the clock.
 */
export function zonedToUtc(
  wall: { year: number; month: number; day: number; hour: number; minute: number },
  zone: string,
): number {
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute);
  const fixed = fixedOffsetMs(zone);
  if (fixed !== undefined) return asUtc - fixed;
  // The zone's offsets half a day either side: a clock change in between gives two candidates.
  const candidates = [-HALF_DAY_MS, 0, HALF_DAY_MS].map((d) => asUtc - offsetMs(asUtc + d, zone));
  const matches = candidates.filter((utc) => {
    const w = wallClock(utc, zone);
    return w.day === wall.day && w.hour === wall.hour && w.minute === wall.minute;
  });
  // A time the clocks pass twice (the hour repeated when they go back) is taken at its later
  // occurrence, and a time they skip at the moment after the gap: waiting an hour too long never
  // types before the limit has reset.
  return Math.max(...(matches.length > 0 ? matches : candidates));
}

const HALF_DAY_MS = 12 * 3600_000;

/** A 5-hour (session) limit; the others reset within a day to a month. */
function isFiveHour(limitKind: string | undefined): boolean {
  return /5-hour|five|session/i.test(limitKind ?? "");
}

/**
 * How long a limit of each kind lasts: a banner whose reset is further in the past than this is
 * stale (printed long ago, or only quoted), not a limit.
 */
export function limitWindowMs(limitKind: string | undefined): number {
  const kind = limitKind ?? "";
  if (/month|credit|extra/i.test(kind)) return 31 * 24 * 3600_000;
  if (/week|opus|sonnet|fable|seven/i.test(kind)) return 7 * 24 * 3600_000;
  return 5 * 3600_000;
}

/** How a bare reset time (no date) is placed around the moment a banner was first seen. */
export interface ResetWindow {
  /** The next occurrence is taken when it is at most this far ahead. */
  aheadMs: number;
  /** …and otherwise the last one, unless that is further back than this: then the next. */
  pastMs: number;
}

/**
 * How a bare reset time is read for each kind of limit. The client writes a bare time for a
 * reset within 24 h and adds the date beyond (reference §4a). A 5-hour limit cannot reset more
 * than 5 h ahead, so a time further ahead is one that has passed. Any other limit can reset up
 * to 24 h ahead: reading its future reset as past would type into a limit still in force and use
 * up the attempts. A banner that names no limit (older builds' 5-hour one, mostly) is read as a
 * 5-hour limit when that fits, a reset within the last 5 h, and else as one up to 24 h ahead.
 */
export function resetWindow(limitKind: string | undefined): ResetWindow {
  if (isFiveHour(limitKind)) return { aheadMs: 5 * 3600_000, pastMs: Infinity };
  if (/unnamed/.test(limitKind ?? "")) return { aheadMs: 5 * 3600_000, pastMs: 5 * 3600_000 };
  return { aheadMs: 24 * 3600_000, pastMs: Infinity };
}

/**
 * The instant a banner's reset means, anchored to when the banner was first seen. A wall time
 * with no date is the next occurrence after the anchor when that is within the limit's window
 * (see {@linkcode resetWindow});
 * otherwise the banner was older than the watcher's first look and the reset has already passed
 * (this is the midnight case: "resets 10:30pm" first seen at 00:10 is 1 h 40 min ago, not 22 h
 * ahead). A date picks the year nearest the anchor. Returns null for a zone it cannot read (it
 * never guesses one: `(EST5EDT)` read as the local zone would be hours off).
 */
export function resolveReset(
  phrase: ResetPhrase,
  { anchorMs, localZone, window }: { anchorMs: number; localZone: string; window: ResetWindow },
): number | null {
  if (phrase.kind === "epoch") return phrase.ms;
  if (phrase.kind === "relative") return anchorMs + phrase.ms;
  const zone = phrase.zone ?? localZone;
  if (!isKnownZone(zone)) return null;
  const here = wallClock(anchorMs, zone);
  const at = (year: number, month: number, day: number) =>
    zonedToUtc({ year, month, day, hour: phrase.hour, minute: phrase.minute }, zone);
  if (phrase.month !== undefined && phrase.day !== undefined) {
    const years = phrase.year !== undefined
      ? [phrase.year]
      : [here.year - 1, here.year, here.year + 1];
    const options = years.map((y) => at(y, phrase.month!, phrase.day!));
    return options.reduce((a, b) => (Math.abs(a - anchorMs) <= Math.abs(b - anchorMs) ? a : b));
  }
  // The same wall time yesterday, today and tomorrow (Date.UTC normalises day overflow).
  const candidates = [-1, 0, 1].map((offset) => {
    const d = new Date(Date.UTC(here.year, here.month - 1, here.day + offset));
    return at(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate());
  });
  const future = candidates.find((c) => c > anchorMs);
  const past = [...candidates].reverse().find((c) => c <= anchorMs);
  if (
    future !== undefined &&
    (future - anchorMs <= window.aheadMs || past === undefined || anchorMs - past > window.pastMs)
  ) return future;
  return past ?? null;
}
