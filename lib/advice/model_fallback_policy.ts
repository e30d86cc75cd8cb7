/**
 * Model fallback advice (spec/error-recovery.md §5.6, DESIGN §7): three consecutive overload or
 * server failures suggest the next model up the ladder (haiku → sonnet → opus). A rate limit never
 * counts (wait for the reset; a stronger model is limited too) and permanent errors never retry.
 *
 * Outcomes can arrive late and twice: a StopFailure hook may be killed before it records anything,
 * and the same error is then found in the transcript. So the state keeps recent failures with
 * their time and key, and derives the count: failures after the last success, each key once.
 * Pure: `decideTurn(state, event, { now, ...settings }) → { state, actions }`; the advice is data,
 * and `model_fallback.ts` renders it.
 *
 * @module
 */

import type { TurnOutcome } from "../claude/transcript.ts";
import { API_ERROR_KINDS, PROMPT_TOO_LONG, RESET_PHRASE, textEnds } from "../claude/patterns.ts";

/** A failure that counts, remembered until a later success makes it irrelevant. */
export interface CountedFailure {
  key: string;
  /** Epoch milliseconds. */
  at: number;
  error: string;
}

/** `sessions/<id>/failure-tracker.json` (the spec's fields first). */
export interface TrackerState {
  consecutive_failures: number;
  current_model: string | null;
  last_error: string | null;
  updated_at: string;
  /** Epoch milliseconds of the latest success seen, or null. */
  last_success_at: number | null;
  /** Counted failures newer than the last success (bounded). */
  failures: CountedFailure[];
  /** Keys of errors already advised on, so one error gets its advice once (bounded). */
  advised: string[];
}

/** How the policy treats an API error. */
export type ErrorClass = "counted" | "rate_limit" | "permanent" | "other";

const KEEP = 64;

/** An empty tracker. */
export function emptyTracker(): TrackerState {
  return {
    consecutive_failures: 0,
    current_model: null,
    last_error: null,
    updated_at: new Date(0).toISOString(),
    last_success_at: null,
    failures: [],
    advised: [],
  };
}

/** Classifies a StopFailure `error` (with its message, for "prompt is too long"). */
export function classifyApiError(error: string, message = ""): ErrorClass {
  if ((API_ERROR_KINDS.counted as readonly string[]).includes(error)) return "counted";
  if ((API_ERROR_KINDS.rateLimit as readonly string[]).includes(error)) return "rate_limit";
  if ((API_ERROR_KINDS.permanent as readonly string[]).includes(error)) return "permanent";
  if (error === "invalid_request" && PROMPT_TOO_LONG.test(textEnds(message))) return "permanent";
  return "other";
}

/** The ladder rung a model id belongs to (`claude-opus-5-5` → `opus`), or null. */
export function ladderRung(model: string | null, ladder: readonly string[]): string | null {
  if (!model) return null;
  const lower = model.toLowerCase();
  return [...ladder].reverse().find((rung) => lower.includes(rung.toLowerCase())) ?? null;
}

/** What the agent should be told, as data. */
export type ModelAdvice =
  /** A rate limit: wait for the reset (`reset` as the message wrote it), never switch model. */
  | { kind: "rate_limit"; reset: string | null }
  /** An error no retry fixes: stop and tell the user. */
  | { kind: "permanent"; error: string; message: string | null }
  /** `count` counted failures in a row on `rung` (null: unknown): switch to `next` (null: none). */
  | { kind: "escalate"; count: number; error: string; rung: string | null; next: string | null };

/** Something that happened to the session: a turn's outcome, or its model (SessionStart). */
export type ModelEvent = TurnOutcome | { kind: "model"; model: string };

/** What the policy asks for. */
export type ModelAction = { kind: "advise"; advice: ModelAdvice };

/** The settings (config.modelFallback) and the time. */
export interface ModelOptions {
  now: number;
  threshold: number;
  ladder: readonly string[];
}

/** Recomputes the derived count after a change. */
function settle(state: TrackerState, now: number): TrackerState {
  const since = state.last_success_at ?? -Infinity;
  const failures = state.failures.filter((f) => f.at > since).slice(-KEEP);
  return {
    ...state,
    failures,
    consecutive_failures: failures.length,
    updated_at: new Date(now).toISOString(),
  };
}

function advise(advice: ModelAdvice | null): ModelAction[] {
  return advice === null ? [] : [{ kind: "advise", advice }];
}

/**
 * Applies one event. A success resets the count; a counted failure adds to it once per key,
 * unless a later success is known; the advice for an error is given once.
 */
export function decideTurn(
  state: TrackerState,
  event: ModelEvent,
  { now, threshold, ladder }: ModelOptions,
): { state: TrackerState; actions: ModelAction[] } {
  const nowIso = new Date(now).toISOString();
  if (event.kind === "model") {
    return { state: { ...state, current_model: event.model, updated_at: nowIso }, actions: [] };
  }
  if (event.kind === "success") {
    const last = Math.max(state.last_success_at ?? -Infinity, event.at);
    return { state: settle({ ...state, last_success_at: last }, now), actions: [] };
  }
  const errorClass = classifyApiError(event.error, event.message);
  const once = state.advised.includes(event.key);
  const advised = once ? state.advised : [...state.advised, event.key].slice(-KEEP);
  if (errorClass !== "counted") {
    return {
      state: settle({ ...state, last_error: event.error, advised }, now),
      actions: once ? [] : advise(nonCountedAdvice(errorClass, event)),
    };
  }
  const stale = state.last_success_at !== null && event.at <= state.last_success_at;
  if (stale || state.failures.some((f) => f.key === event.key)) {
    return { state: settle(state, now), actions: [] };
  }
  const next = settle({
    ...state,
    last_error: event.error,
    failures: [...state.failures, { key: event.key, at: event.at, error: event.error }],
    advised,
  }, now);
  return {
    state: next,
    actions: next.consecutive_failures >= threshold ? advise(escalation(next, ladder)) : [],
  };
}

function nonCountedAdvice(
  errorClass: ErrorClass,
  outcome: TurnOutcome & { kind: "api_error" },
): ModelAdvice | null {
  const message = outcome.message?.trim() || null;
  if (errorClass === "rate_limit") {
    const reset = message ? RESET_PHRASE.exec(textEnds(message))?.[1]?.trim() ?? null : null;
    return { kind: "rate_limit", reset };
  }
  if (errorClass === "permanent") return { kind: "permanent", error: outcome.error, message };
  return null;
}

/** The advice after `threshold` consecutive counted failures. */
function escalation(state: TrackerState, ladder: readonly string[]): ModelAdvice {
  const rung = ladderRung(state.current_model, ladder);
  return {
    kind: "escalate",
    count: state.consecutive_failures,
    error: state.last_error ?? "server_error",
    rung,
    next: rung === null ? null : ladder[ladder.indexOf(rung) + 1] ?? null,
  };
}
