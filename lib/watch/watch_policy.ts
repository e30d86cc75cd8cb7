/**
 * The rate-limit watcher's decisions (spec/error-recovery.md §5.1, reference §8): for one pane,
 * from its record, what the screen shows and the time, what to do now. A pure function of
 * (state, event, now); `commands/watch_tmux.ts` does the capturing and typing around it.
 *
 * @module
 */

import { parseResetPhrase, resetWindowMs, resolveReset } from "../claude/reset_time.ts";
import type { Classification, PaneState } from "../claude/screen.ts";

/** What the watcher remembers about a pane, persisted between scans and restarts. */
export interface PaneRecord {
  pane: string;
  session: string;
  state: PaneState;
  /** Identifies one limit or error episode: the banner line and its reset. */
  episode: string | null;
  /** When this episode was first seen (epoch ms): the anchor for its reset time. */
  first_seen_at: number | null;
  /** The reset the banner means (epoch ms), or null. */
  reset_at: number | null;
  /** When to act (epoch ms): reset + margin, staggered, or the next retry. */
  resume_at: number | null;
  /** Resume attempts in this episode. */
  attempts: number;
  /** This episode was resumed: one resume per pane per reset. */
  resumed: boolean;
  gave_up: boolean;
  /** Unreadable reset times seen in a row (for the capped re-check backoff). */
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
   * (Absent in state written by older versions.)
   */
  api_retries?: number;
}

/** What to do with a pane now. */
export type WatchAction = "none" | "wait" | "resume" | "refuse" | "report";

/** A decision. */
export interface Decision {
  record: PaneRecord;
  action: WatchAction;
  reason: string;
  /** How to resume, when the action is `resume`. */
  keys?: "text" | "enter";
}

/** The watcher's settings (from config.watch). */
export interface WatchPolicy {
  resumeMarginSeconds: number;
  nativeMarginSeconds: number;
  transientBackoffSeconds: number;
  maxAttempts: number;
  /** Resumes after transient API errors in a row before leaving it to the user (retry.foregroundMax). */
  foregroundRetries: number;
  /** The zone for banners that name none. */
  localZone: string;
}

/** A fresh record for a pane. */
export function newRecord(pane: string, session: string): PaneRecord {
  return {
    pane,
    session,
    state: "normal",
    episode: null,
    first_seen_at: null,
    reset_at: null,
    resume_at: null,
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

function capped(baseMs: number, exponent: number): number {
  return Math.min(MAX_BACKOFF_MS, baseMs * 2 ** exponent);
}

function iso(ms: number | null): string {
  return ms === null ? "?" : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Starts a new episode when the banner (or error) is not the one on record. */
function withEpisode(record: PaneRecord, c: Classification, now: number): PaneRecord {
  const kind = c.state === "native_autocontinue" ? "usage_limit" : c.state;
  const episode = JSON.stringify([kind, c.signature ?? "", c.resetText ?? ""]);
  if (record.episode === episode) return { ...record, state: c.state };
  // The banner with the client's auto-continue armed, then the same banner after Esc cancelled
  // it: one episode, one anchor.
  const previous = record.episode === null ? null : JSON.parse(record.episode) as string[];
  if (previous?.[0] === "usage_limit" && kind === "usage_limit" && previous[1] === c.signature) {
    return { ...record, state: c.state, episode, resume_at: null };
  }
  return {
    ...newRecord(record.pane, record.session),
    state: c.state,
    episode,
    first_seen_at: now,
    api_retries: record.api_retries ?? 0,
  };
}

/**
 * Decides what to do with a pane. `c` is this scan's reading of it and `screenHash` identifies
 * the screen, so a refusal or report is not repeated until something changes.
 */
export function decide(
  current: PaneRecord,
  c: Classification,
  screenHash: string,
  now: number,
  policy: WatchPolicy,
): Decision {
  const quiet = current.quiet_on === screenHash;
  switch (c.state) {
    case "normal":
    case "busy": {
      // The banner went away (the agent resumed, by us or otherwise): the episode is over. The
      // run of API retries ends only when the agent is idle without an error, not while it works.
      const record = {
        ...newRecord(current.pane, current.session),
        state: c.state,
        api_retries: c.state === "busy" ? current.api_retries ?? 0 : 0,
      };
      return {
        record,
        action: "none",
        reason: c.state === "busy" ? `busy (${c.reason})` : c.reason,
      };
    }
    case "dangerous_prompt":
      return {
        record: { ...current, state: c.state },
        action: "none",
        reason: `${c.reason} on screen: never typed into`,
      };
    case "permanent": {
      const record = { ...current, state: c.state, quiet_on: screenHash };
      return quiet ? { record, action: "none", reason: `${c.reason}: reported already` } : {
        record,
        action: "report",
        reason: `${c.reason}: waiting will not fix it; needs the user`,
      };
    }
    case "limit_menu":
      if (c.keys !== "enter") {
        return {
          record: { ...current, state: c.state },
          action: "none",
          reason: `${c.reason}: not the safe choice, never typed into`,
        };
      }
  }
  // usage_limit, native_autocontinue, transient_api_error, and the limit menu on its safe choice.
  let record = withEpisode(current, c, now);
  if (record.resumed) return { record, action: "none", reason: "already resumed for this reset" };
  if (record.gave_up) {
    return { record, action: "none", reason: `gave up after ${record.attempts} attempts` };
  }
  const retries = record.api_retries ?? 0;
  if (c.state === "transient_api_error" && retries >= policy.foregroundRetries) {
    // Foreground work retries a failing API a few times, then stops adding load (spec §5.7).
    return {
      record: { ...record, gave_up: true, quiet_on: screenHash },
      action: "report",
      reason:
        `${c.reason} again after ${retries} resumes in a row; needs the user (or another model)`,
    };
  }
  if (quiet && record.refusal) {
    return {
      record,
      action: "none",
      reason: `refused before (${record.refusal}); screen unchanged`,
    };
  }
  if (record.resume_at === null) {
    const planned = plan(record, c, now, policy);
    if ("wait" in planned) {
      return { record: { ...record, ...planned.record }, action: "wait", reason: planned.wait };
    }
    record = { ...record, ...planned };
  }
  const reason = describeWait(record, c);
  if (now < record.resume_at!) {
    return { record, action: "wait", reason: `${reason}; resume at ${iso(record.resume_at)}` };
  }
  return { record, action: "resume", reason, keys: c.keys ?? "text" };
}

/** When to act on a new episode, or why it cannot be planned yet. */
function plan(
  record: PaneRecord,
  c: Classification,
  now: number,
  policy: WatchPolicy,
): Partial<PaneRecord> | { wait: string; record: Partial<PaneRecord> } {
  const anchor = record.first_seen_at ?? now;
  if (c.state === "transient_api_error") {
    return {
      reset_at: null,
      resume_at: anchor + capped(policy.transientBackoffSeconds * 1000, record.attempts),
    };
  }
  const phrase = c.resetText ? parseResetPhrase(c.resetText) : null;
  const reset = phrase
    ? resolveReset(phrase, {
      anchorMs: anchor,
      localZone: policy.localZone,
      windowMs: resetWindowMs(c.limitKind),
    })
    : null;
  if (reset === null) {
    // Never type blindly: look again later, less and less often.
    const unparsed = record.unparsed + 1;
    return {
      wait: `reset time not understood (${JSON.stringify(c.resetText ?? "")}); look again in ${
        Math.round(capped(60_000, unparsed - 1) / 1000)
      }s`,
      record: { unparsed },
    };
  }
  const margin = c.state === "native_autocontinue"
    ? policy.nativeMarginSeconds
    : policy.resumeMarginSeconds;
  return { reset_at: reset, resume_at: reset + margin * 1000, unparsed: 0 };
}

function describeWait(record: PaneRecord, c: Classification): string {
  if (c.state === "native_autocontinue") {
    return `the client continues by itself at ${c.resetText}; left alone until well after`;
  }
  if (c.state === "transient_api_error") return `${c.reason}: resume after a backoff`;
  return `limited until ${iso(record.reset_at)} (${c.resetText})`;
}

/** The record after a refusal at the last check before typing. */
export function refused(record: PaneRecord, reason: string, screenHash: string): PaneRecord {
  return { ...record, refusal: reason, quiet_on: screenHash };
}

/**
 * The record after a resume attempt. Success ends the episode's resuming; a failure retries after
 * a backoff, and after `maxAttempts` gives up.
 */
export function afterAttempt(
  record: PaneRecord,
  { ok, what, now }: { ok: boolean; what: string; now: number },
  policy: Pick<WatchPolicy, "maxAttempts">,
): PaneRecord {
  const attempts = record.attempts + 1;
  const tried = [...record.tried, what].slice(-10);
  if (ok) {
    const api_retries = (record.api_retries ?? 0) +
      (record.state === "transient_api_error" ? 1 : 0);
    return { ...record, attempts, tried, resumed: true, api_retries };
  }
  const gave_up = attempts >= policy.maxAttempts;
  return { ...record, attempts, tried, gave_up, resume_at: now + capped(30_000, attempts - 1) };
}

/**
 * Staggers resumes: a pane due within `staggerMs` of another pending pane moves after it, with a
 * little jitter, so sessions that reset together do not all hit the limit again at once.
 * Records are taken in order of their resume time (then pane id) so the result is stable.
 */
export function stagger(
  records: PaneRecord[],
  staggerMs: number,
  random: () => number,
): PaneRecord[] {
  const pending = records
    .filter((r) => r.resume_at !== null && !r.resumed && !r.gave_up)
    .sort((a, b) => a.resume_at! - b.resume_at! || a.pane.localeCompare(b.pane));
  const moved = new Map<string, number>();
  let previous: number | null = null;
  for (const record of pending) {
    let at = record.resume_at!;
    if (previous !== null && at < previous + staggerMs) {
      at = previous + staggerMs + Math.floor(random() * Math.min(1000, staggerMs / 2));
      moved.set(record.pane, at);
    }
    previous = at;
  }
  return records.map((r) => (moved.has(r.pane) ? { ...r, resume_at: moved.get(r.pane)! } : r));
}
