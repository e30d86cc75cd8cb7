/**
 * The rate-limit watcher's decisions (spec/error-recovery.md §5.1, reference §8): for one pane,
 * from its record, what its session's records say and what its screen shows, what to do now.
 * Pure: `decidePane(state, observation, { now, ...settings }) → { state, actions }`; the engine
 * (`engine.ts`) does the capturing, the last look before each keystroke, and the typing.
 *
 * The records say what happened and when it resets; the screen says what a keystroke would hit
 * now. A resume is decided only for an idle agent at an empty input box, with no prompt, dialog,
 * busy row or armed native auto-continue on screen, and the engine checks that again before
 * every keystroke.
 *
 * @module
 */

import {
  limitWindowMs,
  parseResetPhrase,
  resetWindow,
  resolveReset,
} from "../claude/reset_time.ts";
import type { PaneState, ScreenReading } from "../claude/screen.ts";
import type { RecordSignal } from "./records_policy.ts";

/** Where a decision's facts came from. */
export type Signal = "records" | "screen" | "both";

/** What the watcher remembers about a pane, persisted between scans and restarts. */
export interface PaneRecord {
  pane: string;
  /** The pane's process (pid and start), so a recycled pane id never inherits this record. */
  identity: string;
  session: string;
  state: PaneState;
  signal: Signal | null;
  /** The last decision's reason, as printed (`status` shows it). */
  reason: string;
  /** One limit or error episode: its kind and banner. */
  episode: string | null;
  /** When this episode was first seen (epoch ms): the anchor for its reset time. */
  first_seen_at: number | null;
  /** The reset the episode means (epoch ms), or null. */
  reset_at: number | null;
  /** When to act (epoch ms): reset + margin, staggered, or the next retry. */
  resume_at: number | null;
  /** An unreadable reset is looked at again only from this time on (epoch ms). */
  next_look_at: number | null;
  attempts: number;
  /** This episode was resumed: one resume per pane per reset. */
  resumed: boolean;
  gave_up: boolean;
  /** Unreadable reset times seen in a row (for the capped look-again backoff). */
  unparsed: number;
  /** The screen (hash) a refusal or report was made on: not again until it changes. */
  quiet_on: string | null;
  /** Why the last refusal was made. */
  refusal: string | null;
  /** What each attempt did and how it ended. */
  tried: string[];
  /**
   * Transient API errors resumed in a row: kept across episodes until the agent is seen idle
   * without an error, so an API that keeps failing is retried a bounded number of times.
   */
  api_retries: number;
  /** The user opted the pane out (`@lifeline off`, `lifeline watch pause`): never typed into. */
  paused?: boolean;
  /** The episode (or state) the user was last told about: one notification per episode. */
  notified?: string | null;
  /**
   * The resume text this watcher typed and had to leave in the input box. Never taken back later:
   * the user may have typed the same words since, and a screen cannot tell the two apart.
   */
  left_text?: string | null;
}

/** What one scan saw of a pane. */
export interface PaneObservation {
  reading: ScreenReading;
  /** Identifies the screen, so a refusal or report is not repeated until it changes. */
  screenHash: string;
  /** What the pane's session records say, or null when no registered session is joined to it. */
  records: RecordSignal | null;
}

/** Something for the engine to do. */
export type WatchAction =
  | { kind: "none"; reason: string }
  | { kind: "wait"; until: number | null; reason: string }
  | { kind: "resume"; keys: "text" | "enter"; reason: string }
  | { kind: "refuse"; reason: string }
  | { kind: "report"; event: "permanent" | "retries_exhausted" | "gave_up"; reason: string };

/** The watcher's settings (config.watch and retry.foregroundMax), with the time. */
export interface WatchOptions {
  now: number;
  resumeMarginSeconds: number;
  nativeMarginSeconds: number;
  transientBackoffSeconds: number;
  maxAttempts: number;
  /** Resumes after transient API errors in a row before leaving it to the user. */
  foregroundRetries: number;
  /** The zone for banners that name none. */
  localZone: string;
}

/** A decision. */
export interface PaneDecision {
  state: PaneRecord;
  actions: WatchAction[];
  /** The state and the signal to report (the screen's state, or the records' when they lead). */
  shown: { state: PaneState; signal: Signal | null; resetAt: number | null };
}

/** A fresh record for a pane. */
export function newRecord(pane: string, session: string, identity = ""): PaneRecord {
  return {
    pane,
    identity,
    session,
    state: "normal",
    signal: null,
    reason: "",
    episode: null,
    first_seen_at: null,
    reset_at: null,
    resume_at: null,
    next_look_at: null,
    attempts: 0,
    resumed: false,
    gave_up: false,
    unparsed: 0,
    quiet_on: null,
    refusal: null,
    tried: [],
    api_retries: 0,
  };
}

/** Longest wait between looks at an unreadable reset, and between transient retries. */
const MAX_BACKOFF_MS = 30 * 60_000;
/** Two readings of one reset (a banner, then the records) differ by at most this. */
const SAME_RESET_MS = 2 * 60_000;

function capped(baseMs: number, exponent: number): number {
  return Math.min(MAX_BACKOFF_MS, baseMs * 2 ** exponent);
}

/** `2026-11-30T15:01:00Z`, for reasons. */
export function isoMinute(ms: number | null): string {
  return ms === null ? "?" : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** What the screen and the records, together, say the pane is in. */
interface Judgement {
  state: PaneState;
  signal: Signal;
  rule: string;
  banner: string;
  resetText: string | null;
  /** A reset the records give as an instant. */
  resetAt: number | null;
  limitKind: string;
  keys: "text" | "enter";
  /** The screen's layout was not recognised (records lead, the screen cannot confirm). */
  unsure: boolean;
}

const SCREEN_FIRST: readonly PaneState[] = ["dangerous_prompt", "busy", "limit_menu", "permanent"];

function judge(reading: ScreenReading, records: RecordSignal | null): Judgement {
  const fromScreen: Judgement = {
    state: reading.state,
    signal: "screen",
    rule: reading.rule,
    banner: reading.banner ?? "",
    resetText: reading.resetText ?? null,
    resetAt: null,
    limitKind: reading.limitKind ?? "unnamed",
    keys: reading.keys ?? "text",
    unsure: false,
  };
  if (!records || records.kind === "none" || SCREEN_FIRST.includes(reading.state)) {
    return fromScreen;
  }
  if (reading.state === "usage_limit" || reading.state === "native_autocontinue") {
    if (records.kind !== "limited") return fromScreen;
    const native = reading.state === "native_autocontinue" || records.native === "armed";
    return {
      ...fromScreen,
      state: native ? "native_autocontinue" : "usage_limit",
      signal: "both",
      resetAt: records.resetAt,
      limitKind: records.limitKind,
    };
  }
  if (reading.state === "transient_api_error") {
    return records.kind === "transient" ? { ...fromScreen, signal: "both" } : fromScreen;
  }
  // The screen shows nothing to act on: the records lead, when they say something happened and
  // the transcript confirms nothing came after it.
  if (records.kind !== "working" && !records.confirmed) return fromScreen;
  // A reply or tool call (or the tail of one, a fragment) is the newest thing on screen: that
  // conversation may well be newer than the records' error (a /clear and a new question in the
  // same client, another session in the pane). The records lead only over a screen that shows
  // nothing newer.
  if (["assistant", "tool", "fragment"].includes(reading.latest ?? "")) return fromScreen;
  if (records.kind === "limited") {
    return {
      state: records.native === "armed" ? "native_autocontinue" : "usage_limit",
      signal: "records",
      rule: `the session's records: ${records.text || "a usage limit"}`,
      banner: records.text,
      resetText: null,
      resetAt: records.resetAt,
      limitKind: records.limitKind,
      keys: "text",
      unsure: !reading.confident,
    };
  }
  if (records.kind === "transient" && reading.confident && reading.idle) {
    return {
      ...fromScreen,
      state: "transient_api_error",
      signal: "records",
      rule: `the session's records: ${records.text || records.error}`,
      banner: records.text || records.error,
    };
  }
  if (records.kind === "permanent") {
    return {
      ...fromScreen,
      state: "permanent",
      signal: "records",
      rule: `the session's records: ${records.text || records.error}`,
      banner: records.text || records.error,
    };
  }
  return fromScreen;
}

/** The reset a judgement means, anchored to when its episode was first seen. */
function resetOf(j: Judgement, anchorMs: number, localZone: string): number | null {
  if (j.resetAt !== null) return j.resetAt;
  const phrase = j.resetText ? parseResetPhrase(j.resetText) : null;
  return phrase
    ? resolveReset(phrase, { anchorMs, localZone, window: resetWindow(j.limitKind) })
    : null;
}

/** An episode is `[family, banner, limit kind]`, as JSON. */
function episodeOf(record: PaneRecord): [string, string, string] | null {
  try {
    const value = record.episode === null ? null : JSON.parse(record.episode);
    return Array.isArray(value)
      ? [String(value[0]), String(value[1]), String(value[2] ?? "")]
      : null;
  } catch {
    return null; // an episode an older version wrote, or a damaged one: a new episode
  }
}

function isLimitEpisode(record: PaneRecord): boolean {
  return episodeOf(record)?.[0] === "limit";
}

function episodeKind(record: PaneRecord): string {
  return episodeOf(record)?.[2] ?? "";
}

/** Continues the record's episode, or starts a new one when this is another limit or error. */
function withEpisode(record: PaneRecord, j: Judgement, options: WatchOptions): PaneRecord {
  const family = j.state === "transient_api_error" ? "transient" : "limit";
  const episode = episodeOf(record);
  const ongoing = episode !== null && episode[0] === family;
  if (ongoing) {
    const reset = family === "limit" ? resetOf(j, record.first_seen_at!, options.localZone) : null;
    const sameReset = reset !== null && record.reset_at !== null &&
      Math.abs(reset - record.reset_at) <= SAME_RESET_MS;
    const sameBanner = episode![1] === j.banner;
    // The banner with auto-continue armed, then cancelled; the banner, then (scrolled away) the
    // records: one episode, one anchor, one resume.
    if (sameReset || (reset === null && sameBanner) || (family === "transient" && sameBanner)) {
      // Auto-continue armed, then cancelled (or re-armed): the same reset, another margin.
      const replan =
        (record.state === "native_autocontinue") !== (j.state === "native_autocontinue");
      // The same limit back after the agent worked again: the resume did not hold. Another
      // attempt after a backoff, counted against the same cap.
      const back = record.resumed && (record.state === "busy" || record.state === "normal");
      const again = family === "limit"
        ? {
          gave_up: record.attempts >= options.maxAttempts,
          resume_at: options.now + capped(30_000, record.attempts - 1),
          tried: [...record.tried, "the limit came back after the agent resumed"].slice(-10),
        }
        : {
          // The retry counts (api_retries) bound a failing API: report after foregroundMax.
          resume_at: options.now +
            capped(options.transientBackoffSeconds * 1000, record.api_retries - 1),
          tried: [...record.tried, "the error came back after the agent resumed"].slice(-10),
        };
      return {
        ...record,
        state: j.state,
        signal: j.signal,
        ...(replan ? { resume_at: null } : {}),
        ...(back ? { resumed: false, ...again } : {}),
      };
    }
  }
  return {
    ...newRecord(record.pane, record.session, record.identity),
    state: j.state,
    signal: j.signal,
    episode: JSON.stringify([family, j.banner, j.limitKind]),
    first_seen_at: options.now,
    api_retries: record.api_retries,
  };
}

function decision(
  state: PaneRecord,
  action: WatchAction,
  shown: PaneDecision["shown"],
): PaneDecision {
  return { state: { ...state, reason: action.reason }, actions: [action], shown };
}

/** Decides what to do with a pane now. */
export function decidePane(
  current: PaneRecord,
  observation: PaneObservation,
  options: WatchOptions,
): PaneDecision {
  const { reading, screenHash } = observation;
  const j = judge(reading, observation.records);
  const shown = { state: j.state, signal: j.signal, resetAt: current.reset_at };
  const quiet = current.quiet_on === screenHash;
  switch (j.state) {
    case "normal":
    case "busy": {
      // The episode is over (the agent resumed, by us or otherwise). The run of API retries ends
      // only when the agent is idle without an error, not while it works. A limit's episode is
      // remembered until its window ends: the same reset on screen again means the resume did
      // not hold, and its attempts go on counting (not a fresh episode with fresh attempts).
      const api_retries = j.state === "busy" ? current.api_retries : 0;
      const remembered = isLimitEpisode(current) && current.reset_at !== null &&
        options.now - current.reset_at <= limitWindowMs(episodeKind(current));
      const state = remembered
        ? { ...current, state: j.state, signal: j.signal, api_retries, refusal: null }
        : {
          ...newRecord(current.pane, current.session, current.identity),
          state: j.state,
          signal: j.signal,
          api_retries,
        };
      return decision(state, { kind: "none", reason: j.rule }, { ...shown, resetAt: null });
    }
    case "dangerous_prompt":
      return decision(
        { ...current, state: j.state, signal: j.signal },
        { kind: "none", reason: `${j.rule} on screen: never typed into` },
        shown,
      );
    case "permanent": {
      const state = { ...current, state: j.state, signal: j.signal, quiet_on: screenHash };
      return quiet
        ? decision(state, { kind: "none", reason: `${j.rule}: reported already` }, shown)
        : decision(state, {
          kind: "report",
          event: "permanent",
          reason: `${j.rule}: waiting will not fix it; needs the user`,
        }, shown);
    }
    case "limit_menu":
      if (j.keys !== "enter") {
        return decision(
          { ...current, state: j.state, signal: j.signal },
          { kind: "none", reason: `${j.rule}: not the safe choice, never typed into` },
          shown,
        );
      }
  }
  const next = withEpisode(current, j, options);
  if (next.gave_up && !current.gave_up) {
    // The limit came back once too often: said once, then left to the user.
    return decision({ ...next, quiet_on: screenHash }, {
      kind: "report",
      event: "gave_up",
      reason: `gave up after ${next.attempts} attempts on ${j.state}: ${next.tried.join("; ")}`,
    }, { ...shown, resetAt: next.reset_at });
  }
  return decideEpisode(next, j, observation, options, quiet);
}

/** A usage limit, the client's own auto-continue, a transient error, or the limit menu's safe choice. */
function decideEpisode(
  start: PaneRecord,
  j: Judgement,
  { reading, screenHash, records }: PaneObservation,
  options: WatchOptions,
  quiet: boolean,
): PaneDecision {
  const { now } = options;
  let record = start;
  const shown = () => ({ state: j.state, signal: j.signal, resetAt: record.reset_at });
  if (record.resumed) {
    const what = j.state === "transient_api_error" ? "this error" : "this reset";
    return decision(record, { kind: "none", reason: `already resumed for ${what}` }, shown());
  }
  if (record.gave_up) {
    return decision(
      record,
      { kind: "none", reason: `gave up after ${record.attempts} attempts; needs the user` },
      shown(),
    );
  }
  if (j.state === "transient_api_error" && record.api_retries >= options.foregroundRetries) {
    // Foreground work retries a failing API a few times, then stops adding load (spec §5.7).
    record = { ...record, gave_up: true, quiet_on: screenHash };
    return decision(record, {
      kind: "report",
      event: "retries_exhausted",
      reason: `${j.rule} again after ${record.api_retries} resumes in a row; ` +
        "needs the user (or another model)",
    }, shown());
  }
  if (record.next_look_at !== null && now < record.next_look_at) {
    return decision(record, {
      kind: "wait",
      until: record.next_look_at,
      reason: `reset time not understood (${JSON.stringify(j.resetText ?? "")}); ` +
        `next look at ${isoMinute(record.next_look_at)}`,
    }, shown());
  }
  if (record.resume_at === null) {
    if (j.state === "transient_api_error") {
      record = {
        ...record,
        resume_at: record.first_seen_at! +
          capped(options.transientBackoffSeconds * 1000, record.attempts),
      };
    } else {
      const reset = resetOf(j, record.first_seen_at!, options.localZone);
      if (reset === null) {
        // Never type blindly: look again later, less and less often.
        const unparsed = record.unparsed + 1;
        const next = now + capped(60_000, unparsed - 1);
        record = { ...record, unparsed, next_look_at: next };
        return decision(record, {
          kind: "wait",
          until: next,
          reason: `reset time not understood (${JSON.stringify(j.resetText ?? "")}); ` +
            `next look at ${isoMinute(next)}`,
        }, shown());
      }
      record = {
        ...record,
        reset_at: reset,
        resume_at: reset + marginMs(j, options),
        unparsed: 0,
        next_look_at: null,
      };
    }
  }
  if (record.reset_at !== null && record.resume_at! < record.reset_at + marginMs(j, options)) {
    // Never before the reset, whatever a saved record says.
    record = { ...record, resume_at: record.reset_at + marginMs(j, options) };
  }
  if (
    records?.kind === "working" && record.reset_at !== null && records.at > record.reset_at &&
    j.signal === "screen"
  ) {
    // The session talked on after this banner's reset: the banner is history on the screen.
    return decision(
      { ...record, state: "normal" },
      {
        kind: "none",
        reason: `the session's records show conversation at ${isoMinute(records.at)}, after ` +
          `this banner's reset (${isoMinute(record.reset_at)}): an old banner, not a limit`,
      },
      { ...shown(), state: "normal" },
    );
  }
  if (record.reset_at !== null && now - record.reset_at > limitWindowMs(j.limitKind)) {
    return decision(
      { ...record, state: "normal" },
      {
        kind: "none",
        reason: `a stale banner: its reset (${isoMinute(record.reset_at)}) passed more than ` +
          `the ${j.limitKind} limit's window ago; not a limit`,
      },
      { ...shown(), state: "normal" },
    );
  }
  if (now < record.resume_at!) {
    const reason = j.state === "native_autocontinue"
      ? `the client continues by itself at ${isoMinute(record.reset_at)}; left alone until ` +
        isoMinute(record.resume_at)
      : j.state === "transient_api_error"
      ? `${j.rule}: resume after a backoff, at ${isoMinute(record.resume_at)}`
      : record.attempts > 0 && record.refusal !== null
      ? `not resumed yet: the last try stopped before Enter (${record.refusal}); next try at ` +
        isoMinute(record.resume_at)
      : record.attempts > 0 && record.reset_at !== null && now >= record.reset_at
      ? `the limit is still on after ${record.attempts} attempt${
        record.attempts === 1 ? "" : "s"
      }; next try at ${isoMinute(record.resume_at)}`
      : `limited until ${isoMinute(record.reset_at)}; resume at ${isoMinute(record.resume_at)}`;
    return decision(record, { kind: "wait", until: record.resume_at, reason }, shown());
  }
  if (quiet && record.refusal) {
    return decision(
      record,
      { kind: "none", reason: `refused before (${record.refusal}); screen unchanged` },
      shown(),
    );
  }
  const refusal = j.unsure
    ? "the records say limited, but the screen cannot be read with confidence"
    : j.keys === "enter" && j.state === "limit_menu"
    ? null
    : !reading.idle
    ? reading.input === null
      ? "no input box on screen"
      : reading.input === record.left_text
      ? `the input box holds ${JSON.stringify(reading.input)}, which lifeline typed and had to ` +
        "leave there (or you typed since): clear it, or press Enter yourself"
      : `the input box holds text (${JSON.stringify(reading.input.slice(0, 40))}): never typed into`
    : null;
  if (refusal) {
    return decision(
      refused(record, refusal, screenHash),
      { kind: "refuse", reason: refusal },
      shown(),
    );
  }
  const what = j.state === "native_autocontinue"
    ? `the client's own continue did not come by ${isoMinute(record.resume_at)}`
    : j.state === "transient_api_error"
    ? `${j.rule}: backoff over`
    : j.state === "limit_menu"
    ? 'the limit menu is on "Stop and wait for limit to reset"'
    : `the limit reset at ${isoMinute(record.reset_at)}`;
  return decision(record, { kind: "resume", keys: j.keys, reason: what }, shown());
}

/** How long after the reset to act: the client's own continue gets a longer margin. */
function marginMs(j: Judgement, options: WatchOptions): number {
  return (j.state === "native_autocontinue"
    ? options.nativeMarginSeconds
    : options.resumeMarginSeconds) * 1000;
}

/** The record after a refusal at the last look before typing. */
export function refused(record: PaneRecord, reason: string, screenHash: string): PaneRecord {
  return { ...record, refusal: reason, quiet_on: screenHash, reason };
}

/**
 * The record after a resume attempt. Success ends the episode's resuming; a failure retries after
 * a backoff, and after `maxAttempts` gives up.
 */
export function afterAttempt(
  record: PaneRecord,
  { ok, what }: { ok: boolean; what: string },
  { now, maxAttempts }: { now: number; maxAttempts: number },
): PaneRecord {
  const attempts = record.attempts + 1;
  const tried = [...record.tried, what].slice(-10);
  if (ok && record.state === "limit_menu") {
    // "Stop and wait" chosen: the client waits at its input box, and the resume text is next.
    return { ...record, attempts, tried, resume_at: now, reason: what };
  }
  if (ok) {
    const transient = record.state === "transient_api_error";
    const api_retries = record.api_retries + (transient ? 1 : 0);
    // A resume works when the agent gets going again, as the check saw: the same error on a
    // later screen is the API failing again, another retry (bounded by api_retries).
    return {
      ...record,
      attempts,
      tried,
      resumed: true,
      api_retries,
      reason: what,
      ...(transient ? { state: "busy" as const } : {}),
    };
  }
  const gave_up = attempts >= maxAttempts;
  return {
    ...record,
    attempts,
    tried,
    gave_up,
    reason: what,
    resume_at: now + capped(30_000, attempts - 1),
  };
}

/**
 * Staggers resumes: a pane due within `staggerMs` of another pending pane moves after it, with a
 * little jitter, so sessions that reset together do not all hit the limit again at once.
 * Records are taken in order of their resume time (then pane id) so the result is stable.
 */
export function stagger(
  records: readonly PaneRecord[],
  { staggerMs, random, now }: { staggerMs: number; random: () => number; now: number },
): PaneRecord[] {
  const pending = records
    .filter((r) => r.resume_at !== null && !r.resumed && !r.gave_up)
    .sort((a, b) => a.resume_at! - b.resume_at! || a.pane.localeCompare(b.pane));
  const moved = new Map<string, number>();
  let previous: number | null = null;
  for (const record of pending) {
    // A resume already due is due now: resets that passed together are spaced from now on.
    let at = Math.max(record.resume_at!, now);
    if (previous !== null && at < previous + staggerMs) {
      at = previous + staggerMs + Math.floor(random() * Math.min(1000, staggerMs / 2));
      moved.set(record.pane, at);
    }
    previous = at;
  }
  return records.map((r) => (moved.has(r.pane) ? { ...r, resume_at: moved.get(r.pane)! } : r));
}

/**
 * Why a keystroke must not be sent to a pane showing `reading`, or null. `expect` is what the
 * input box must hold: "" before the resume text (an empty box, or a placeholder), the resume
 * text itself before Enter.
 */
export function keystrokeRefusal(
  reading: ScreenReading,
  { expect, keys, vim = false }: { expect: string; keys: "text" | "enter"; vim?: boolean },
): string | null {
  if (reading.state === "dangerous_prompt") return `${reading.rule} on screen`;
  if (reading.state === "busy") return `the agent is busy (${reading.rule})`;
  if (reading.state === "native_autocontinue") {
    return "the client's own auto-continue is armed: typing would cancel it";
  }
  if (reading.state === "limit_menu") {
    return keys === "enter" && reading.keys === "enter" && expect === ""
      ? null
      : `${reading.rule}: not the safe choice`;
  }
  if (!reading.confident || reading.input === null) return "no input box on screen";
  // In vim mode's NORMAL mode the client shows no indicator, and typed text runs as commands
  // (`u` undoes): only an INSERT indicator says keys go into the box as text.
  if ((vim || reading.vimMode !== undefined) && reading.vimMode !== "INSERT") {
    return `vim mode: the input box is not in INSERT mode (${
      reading.vimMode ?? "no indicator, so NORMAL"
    }); the text would run as vim commands`;
  }
  if (reading.input !== expect) {
    return expect === ""
      ? `the input box holds text (${JSON.stringify(reading.input.slice(0, 40))})`
      : `the input box holds ${JSON.stringify(reading.input.slice(0, 40))}, not the resume text`;
  }
  return null;
}
