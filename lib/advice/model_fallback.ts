/**
 * The I/O around the model-fallback policy: `sessions/<id>/failure-tracker.json`, the turn events
 * that StopFailure leaves in `sessions/<id>/events.jsonl`, and the transcript's API-error rows.
 *
 * StopFailure gets one append and nothing else: under `claude -p` the client kills that hook at
 * exit (reference §9). The next hook of the session folds the events into the tracker; the next
 * SessionStart also reads the transcript's tail, for the events no hook lived to record.
 *
 * @module
 */

import type { TurnOutcome } from "../claude/transcript.ts";
import {
  array,
  looseObject,
  nullable,
  number,
  optional,
  parseShape,
  string,
} from "../core/shape.ts";
import { uniqueSuffix } from "../core/text.ts";
import { joinPath } from "../core/path.ts";
import { sessionPaths } from "../state/layout.ts";
import {
  decideTurn,
  emptyTracker,
  type ModelAdvice,
  type ModelEvent,
  type TrackerState,
} from "./model_fallback_policy.ts";
import {
  appendJsonLine,
  jsonCodec,
  readJsonLines,
  RefusedPathError,
  removeFile,
  renameFile,
  type UpdateResult,
  updateState,
} from "../state/store.ts";
import { outcomesFromRows, readTailLines } from "../claude/transcript.ts";

/** `failure-tracker.json` as other tools may have written it (see `shape.ts`). */
export const TRACKER_SHAPE = looseObject({
  consecutive_failures: optional(number()),
  current_model: optional(nullable(string())),
  last_error: optional(nullable(string())),
  updated_at: optional(string()),
  last_success_at: optional(nullable(number())),
  failures: optional(array(looseObject({ key: string(), at: number(), error: string() }))),
  advised: optional(array(string())),
});

/** Codec for `failure-tracker.json`; fields written by older tools are filled with defaults. */
export const trackerCodec = jsonCodec<TrackerState>(async (value) => {
  const parsed = await parseShape(TRACKER_SHAPE, value);
  const empty = emptyTracker();
  return {
    ...parsed,
    consecutive_failures: parsed.consecutive_failures ?? 0,
    current_model: parsed.current_model ?? null,
    last_error: parsed.last_error ?? null,
    updated_at: parsed.updated_at ?? empty.updated_at,
    last_success_at: parsed.last_success_at ?? null,
    failures: parsed.failures ?? [],
    advised: parsed.advised ?? [],
  };
});

/** One line of `events.jsonl`. */
export interface TurnEvent {
  ts: string;
  event: "StopFailure";
  error: string;
  prompt_id?: string;
  message?: string;
}

/** Records a turn event with one append: all a StopFailure hook does. */
export async function recordTurnEvent(
  root: string,
  sessionId: string,
  event: TurnEvent,
): Promise<void> {
  await appendJsonLine(sessionPaths(root, sessionId).events, event, { root });
}

const BATCH = /^events\.[a-z0-9]+\.folding\.jsonl$/;

/** Moves pending events aside under a unique name; returns every batch waiting, old ones too. */
async function takeBatches(root: string, sessionId: string): Promise<string[]> {
  const dir = sessionPaths(root, sessionId).dir;
  const fresh = joinPath(dir, `events.${uniqueSuffix()}.folding.jsonl`);
  try {
    await renameFile(sessionPaths(root, sessionId).events, fresh, { root });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const batches: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (BATCH.test(entry.name)) batches.push(joinPath(dir, entry.name));
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return batches;
}

function eventToOutcome(row: unknown): TurnOutcome | undefined {
  const event = row as Partial<TurnEvent>;
  if (event.event !== "StopFailure" || typeof event.error !== "string") return undefined;
  const at = typeof event.ts === "string" ? Date.parse(event.ts) : NaN;
  if (Number.isNaN(at)) return undefined;
  return {
    kind: "api_error",
    key: typeof event.prompt_id === "string" ? event.prompt_id : `event:${event.ts}`,
    at,
    error: event.error,
    message: typeof event.message === "string" ? event.message : undefined,
  };
}

async function readOutcomes(root: string, path: string): Promise<TurnOutcome[]> {
  const outcomes: TurnOutcome[] = [];
  try {
    for await (const row of readJsonLines(path, { root })) {
      const outcome = eventToOutcome(row);
      if (outcome) outcomes.push(outcome);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return outcomes;
}

/** What to fold into a session's tracker. */
export interface FoldInput {
  /** Outcomes known to the caller (a Stop is a success). */
  outcomes?: TurnOutcome[];
  /** A transcript whose tail to read for API-error rows. */
  transcriptPath?: string | undefined;
  /** The session's model, when the event says (SessionStart). */
  model?: string | undefined;
}

/** How many transcript bytes the fold reads from the end. */
export const TRANSCRIPT_TAIL_BYTES = 1 << 20;

/**
 * Folds pending events (and `input`) into the session's tracker under its lock, in time order.
 * Returns the advice to give, each piece once.
 */
export async function foldTurns(
  root: string,
  sessionId: string,
  input: FoldInput,
  options: {
    config: { threshold: number; ladder: readonly string[] };
    now: number;
    waitMs: number;
  },
): Promise<{ advice: string[]; result: UpdateResult<TrackerState> }> {
  const paths = sessionPaths(root, sessionId);
  let fromTranscript: { outcomes: TurnOutcome[]; model: string | null } = {
    outcomes: [],
    model: null,
  };
  if (input.transcriptPath) {
    try {
      fromTranscript = outcomesFromRows(
        await readTailLines(input.transcriptPath, TRANSCRIPT_TAIL_BYTES),
      );
    } catch (error) {
      // A transcript that is gone, or is not a regular file (a FIFO would block, a device never
      // end), has nothing to fold; the session's own events still count.
      if (!(error instanceof Deno.errors.NotFound || error instanceof RefusedPathError)) {
        throw error;
      }
    }
  }
  const advice: string[] = [];
  const settings = { now: options.now, ...options.config };
  let batches: string[] = [];
  const result = await updateState(paths.failureTracker, trackerCodec, async (current) => {
    // Events appended after this rename start a new file and wait for the next fold.
    batches = await takeBatches(root, sessionId);
    const events: TurnOutcome[] = [];
    for (const batch of batches) events.push(...await readOutcomes(root, batch));
    const before = current ?? emptyTracker();
    let state = before;
    const model = input.model ?? fromTranscript.model ?? undefined;
    const all: ModelEvent[] = [
      ...(model ? [{ kind: "model" as const, model }] : []),
      ...[...fromTranscript.outcomes, ...events, ...(input.outcomes ?? [])]
        .sort((a, b) => a.at - b.at),
    ];
    for (const event of all) {
      const step = decideTurn(state, event, settings);
      state = step.state;
      // A turn that succeeded later makes advice about earlier errors stale.
      if (event.kind === "success") advice.length = 0;
      for (const action of step.actions) {
        const text = renderModelAdvice(action.advice);
        if (!advice.includes(text)) advice.push(text);
      }
    }
    // Nothing new (the usual SessionStart): leave the file alone rather than rewrite it.
    return current && sameTracker(before, state) ? undefined : state;
  }, { root, waitMs: options.waitMs, now: options.now });
  // Only once the tracker is written: a fold that dies before leaves the batches for the next
  // one, and re-applying them is harmless (each error counts once, by key).
  for (const batch of batches) await removeFile(batch, { root }).catch(() => {});
  return { advice, result };
}

function sameTracker(a: TrackerState, b: TrackerState): boolean {
  return JSON.stringify({ ...a, updated_at: "" }) === JSON.stringify({ ...b, updated_at: "" });
}

/** The sentence the agent reads for a piece of model-fallback advice. */
export function renderModelAdvice(advice: ModelAdvice): string {
  switch (advice.kind) {
    case "rate_limit":
      return `[RATE LIMIT] The API rate limit was hit${
        advice.reset ? ` (it resets ${advice.reset})` : ""
      }. Wait for the reset, then continue. Do not switch model for a rate limit: it does not help.`;
    case "permanent":
      return `[API ERROR] ${advice.error}${
        advice.message ? ` ("${advice.message.slice(0, 200)}")` : ""
      }: retrying will not fix this. Do not retry; stop and tell the user what happened so they can fix it.`;
    case "escalate": {
      const head =
        `[MODEL FALLBACK] ${advice.count} turns in a row failed with overload or server errors`;
      if (advice.rung === null) {
        return `${head} (last: ${advice.error}). Switch to a stronger model than the current one ` +
          "(/model), or wait a few minutes; after a 529, do not retry the same model more than once.";
      }
      if (advice.next === null) {
        return `${head} on ${advice.rung}, the strongest model lifeline knows (last: ${advice.error}). ` +
          "Wait a few minutes before retrying, or switch provider; https://status.claude.com shows incidents.";
      }
      return `${head} on ${advice.rung} (last: ${advice.error}). Switch to ${advice.next}: run ` +
        `/model ${advice.next} (or start claude with --model ${advice.next}). After a 529, do not ` +
        "retry the same model more than once.";
    }
  }
}
