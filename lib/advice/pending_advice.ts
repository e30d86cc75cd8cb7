/**
 * Advice that waits for a hook able to deliver it. Turn events (StopFailure) are folded into the
 * model-fallback tracker by the next hook of the session, and the advice that comes out goes to
 * the session's outbox; `hook remind`, `hook crash` and `hook track` (on tool events) take the
 * outbox and give it to the agent, once.
 *
 * @module
 */

import type { HookRequest } from "../claude/hook_io.ts";
import { postAdvice, renderAdvice, takeAdvice } from "./outbox.ts";
import { sessionPaths } from "../state/layout.ts";
import { pathExists } from "../state/store.ts";
import type { FoldInput } from "./model_fallback.ts";
import type * as ModelFallback from "./model_fallback.ts";
import { importLater } from "../core/lazy.ts";

/**
 * Folds the session's pending turn events (and `fold`, when given) into its tracker, and posts the
 * resulting advice to the session's outbox. Costs one `lstat` when there is nothing to fold, which
 * is nearly always: the fold's modules load only when there are events.
 */
export async function foldIntoOutbox(request: HookRequest, fold?: FoldInput): Promise<void> {
  const { root, input, ctx } = request;
  const session = input.session_id;
  if (!fold && !await pathExists(sessionPaths(root, session).events)) return;
  const { foldTurns } = await importLater<typeof ModelFallback>(
    "./model_fallback.ts",
    import.meta.url,
  );
  const config = await request.config();
  const { advice } = await foldTurns(root, session, fold ?? {}, {
    config: config.modelFallback,
    now: ctx.now(),
    waitMs: await request.lockWaitMs(),
  });
  await queueAdvice(request, `hook ${input.hook_event_name}`, advice);
}

/**
 * Everything waiting for the agent: folds pending turn events (see {@linkcode foldIntoOutbox}),
 * then takes the outbox. The outbox is the one carrier: advice persists there until a hook that
 * can deliver it takes it, so a hook that dies half-way loses nothing.
 */
export async function gatherAdvice(request: HookRequest, fold?: FoldInput): Promise<string[]> {
  await foldIntoOutbox(request, fold);
  const { root, input } = request;
  if (!await pathExists(sessionPaths(root, input.session_id).outbox)) return [];
  const waiting = await takeAdvice(root, input.session_id, { waitMs: await request.lockWaitMs() });
  return [...new Set(waiting.map((a) => a.text))];
}

/** Posts advice to the session's outbox. */
export async function queueAdvice(
  request: HookRequest,
  source: string,
  texts: readonly string[],
): Promise<void> {
  for (const text of texts) {
    await postAdvice(request.root, request.input.session_id, {
      ts: new Date(request.ctx.now()).toISOString(),
      source,
      text,
    }, { waitMs: await request.lockWaitMs() });
  }
}

/** Advice as a block for the model's context ("" for none). */
export function adviceBlock(texts: readonly string[]): string {
  return renderAdvice(texts.map((text) => ({ ts: "", source: "", text })));
}
