/**
 * A session's outbox (`sessions/<id>/outbox.jsonl`): advice written where the event cannot carry
 * context (StopFailure output is ignored by the client), delivered by the next hook that can
 * (`hook remind`, `hook crash`, `hook track`), exactly once.
 *
 * Posting and taking both hold the outbox lock, so advice posted while another hook takes the
 * outbox is never lost: it waits for the next delivery.
 *
 * @module
 */

import { type Infer, looseObject, safeParseShape, string } from "../core/shape.ts";
import { sessionPaths } from "../state/layout.ts";
import { appendJsonLine, pathExists, readJsonLines, removeFile, withLock } from "../state/store.ts";

/** One piece of advice for the agent (see `shape.ts`). */
export const ADVICE_SHAPE = looseObject({
  ts: string(),
  /** What produced it, e.g. `hook track`. */
  source: string(),
  text: string(),
});

/** One piece of advice for the agent. */
export type Advice = Infer<typeof ADVICE_SHAPE>;

/** Appends advice to a session's outbox. */
export async function postAdvice(
  root: string,
  sessionId: string,
  advice: Advice,
  { waitMs }: { waitMs: number },
): Promise<void> {
  const path = sessionPaths(root, sessionId).outbox;
  await withLock(path, () => appendJsonLine(path, advice, { root }), { root, waitMs });
}

/** Reads a session's pending advice without taking it. */
export async function peekAdvice(root: string, sessionId: string): Promise<Advice[]> {
  const path = sessionPaths(root, sessionId).outbox;
  const advice: Advice[] = [];
  try {
    for await (const row of readJsonLines(path, { root })) {
      const parsed = await safeParseShape(ADVICE_SHAPE, row);
      if (parsed.success) advice.push(parsed.data);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return advice;
}

/**
 * Takes all pending advice: reads it and removes the outbox under the lock. Removal comes before
 * delivery, so a crash in between loses advice rather than repeating it (at most once).
 */
export async function takeAdvice(
  root: string,
  sessionId: string,
  { waitMs }: { waitMs: number },
): Promise<Advice[]> {
  const path = sessionPaths(root, sessionId).outbox;
  if (!await pathExists(path)) return []; // the common case, and no lock needed to see it
  return await withLock(path, async () => {
    const advice = await peekAdvice(root, sessionId);
    await removeFile(path, { root }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
    return advice;
  }, { root, waitMs });
}

/** Advice as a block of context, or "" when there is none. Repeated texts are given once. */
export function renderAdvice(advice: readonly Advice[]): string {
  const texts = [...new Set(advice.map((a) => a.text.trim()).filter((t) => t !== ""))];
  return texts.length === 0
    ? ""
    : ["[LIFELINE] Pending advice from earlier events:", ...texts.map((t) => `- ${t}`)].join("\n");
}
