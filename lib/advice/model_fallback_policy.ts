/**
 * Model fallback advice (spec/error-recovery.md §5.6, DESIGN §7): three consecutive overload or
 * server failures suggest the next model up the ladder (haiku → sonnet → opus). A rate limit never
 * counts (wait for the reset; a stronger model is limited too) and permanent errors never retry.
 *
 * Outcomes can arrive late and twice: a StopFailure hook may be killed before it records anything,
 * and the same error is then found in the transcript. So the state keeps recent failures with
 * their time and key, and derives the count: failures after the last success, each key once.
 * Pure functions of (state, outcome).
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

/** Recomputes the derived count after a change. */
function settle(state: TrackerState, nowIso: string): TrackerState {
  const since = state.last_success_at ?? -Infinity;
  const failures = state.failures.filter((f) => f.at > since).slice(-KEEP);
  return { ...state, failures, consecutive_failures: failures.length, updated_at: nowIso };
}

/** Records the session's model (from SessionStart). */
export function withModel(state: TrackerState, model: string, nowIso: string): TrackerState {
  return { ...state, current_model: model, updated_at: nowIso };
}

/**
 * Applies one outcome. Returns the new state and the advice to give (null for none). A success
 * resets the count; a counted failure adds to it once per key, unless a later success is known.
 */
export function applyOutcome(
  state: TrackerState,
  outcome: TurnOutcome,
  config: { threshold: number; ladder: readonly string[] },
  nowIso: string,
): { state: TrackerState; advice: string | null } {
  if (outcome.kind === "success") {
    const last = Math.max(state.last_success_at ?? -Infinity, outcome.at);
    return { state: settle({ ...state, last_success_at: last }, nowIso), advice: null };
  }
  const errorClass = classifyApiError(outcome.error, outcome.message);
  const once = state.advised.includes(outcome.key);
  const advised = once ? state.advised : [...state.advised, outcome.key].slice(-KEEP);
  if (errorClass !== "counted") {
    const advice = once ? null : nonCountedAdvice(errorClass, outcome);
    return {
      state: settle({ ...state, last_error: outcome.error, advised }, nowIso),
      advice,
    };
  }
  const stale = state.last_success_at !== null && outcome.at <= state.last_success_at;
  if (stale || state.failures.some((f) => f.key === outcome.key)) {
    return { state: settle(state, nowIso), advice: null };
  }
  const next = settle({
    ...state,
    last_error: outcome.error,
    failures: [...state.failures, { key: outcome.key, at: outcome.at, error: outcome.error }],
    advised,
  }, nowIso);
  const advice = next.consecutive_failures >= config.threshold
    ? escalationAdvice(next, config.ladder)
    : null;
  return { state: next, advice };
}

function nonCountedAdvice(errorClass: ErrorClass, outcome: TurnOutcome & { kind: "api_error" }) {
  const message = outcome.message?.trim();
  if (errorClass === "rate_limit") {
    const reset = message ? RESET_PHRASE.exec(textEnds(message))?.[1]?.trim() : undefined;
    return `[RATE LIMIT] The API rate limit was hit${
      reset ? ` (it resets ${reset})` : ""
    }. Wait for the reset, then continue. Do not switch model for a rate limit: it does not help.`;
  }
  if (errorClass === "permanent") {
    return `[API ERROR] ${outcome.error}${
      message ? ` ("${message.slice(0, 200)}")` : ""
    }: retrying will not fix this. Do not retry; stop and tell the user what happened so they can fix it.`;
  }
  return null;
}

/** The advice after `threshold` consecutive counted failures. */
export function escalationAdvice(state: TrackerState, ladder: readonly string[]): string {
  const count = state.consecutive_failures;
  const error = state.last_error ?? "server_error";
  const rung = ladderRung(state.current_model, ladder);
  const head = `[MODEL FALLBACK] ${count} turns in a row failed with overload or server errors`;
  if (rung === null) {
    return `${head} (last: ${error}). Switch to a stronger model than the current one (/model), ` +
      "or wait a few minutes; after a 529, do not retry the same model more than once.";
  }
  const next = ladder[ladder.indexOf(rung) + 1];
  if (next === undefined) {
    return `${head} on ${rung}, the strongest model lifeline knows (last: ${error}). ` +
      "Wait a few minutes before retrying, or switch provider; https://status.claude.com shows incidents.";
  }
  return `${head} on ${rung} (last: ${error}). Switch to ${next}: run /model ${next} ` +
    `(or start claude with --model ${next}). After a 529, do not retry the same model more than once.`;
}
