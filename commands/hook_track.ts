/**
 * `lifeline hook track`: failure tracking with advice (spec/error-recovery.md §5.4–5.6).
 *
 * - PostToolUseFailure: counts the tool's consecutive failures and suggests its fallback at the
 *   threshold; an MCP connection error gets backoff advice (1, 2, 4, 8, 16 s), then fallback.
 * - PostToolUse: a success resets that tool's count and MCP retry state.
 * - StopFailure: one append (the client may kill this hook at exit), which the next hook folds
 *   into the model-fallback tracker, and `stop-failure.json`, which `watch tmux` reads.
 * - Stop: a finished turn resets the model-fallback count and clears `stop-failure.json`.
 *
 * Every counter update is a locked read-modify-write: the client runs hooks and tools in parallel.
 *
 * @module
 */

import type { Context } from "../lib/core/cli.ts";
import {
  contextOutput,
  HOOK_FLAGS_HELP,
  type HookOutput,
  type HookRequest,
  isEvent,
  runHook,
} from "../lib/claude/hook_io.ts";
import { sessionPaths } from "../lib/state/layout.ts";
import { adviceBlock, foldIntoOutbox, gatherAdvice } from "../lib/advice/pending_advice.ts";
import { pathExists, removeFile, withLock, writeFileAtomic } from "../lib/state/store.ts";
import { importLater } from "../lib/core/lazy.ts";
import type * as ModelFallback from "../lib/advice/model_fallback.ts";
import type * as ToolFallback from "../lib/advice/tool_fallback.ts";

export const help = `Usage: lifeline hook track [--root DIR] [--background]

Claude Code hook for PostToolUse, PostToolUseFailure, StopFailure and Stop. Tracks failures per
session and advises the agent:

  [MCP RETRY]      an MCP tool failed to connect: wait 1, 2, 4, 8, 16 s (attempts 1-5)
  [MCP FALLBACK]   from the 6th failure: the mapped fallback, or reconnect the server with /mcp
  [TOOL FALLBACK]  a tool failed twice in a row: its alternative from
                   .working-state/fallback-tools.md (or a built-in one)
  [MODEL FALLBACK] three overloaded or server-error turns in a row: the next model up the ladder
  [RATE LIMIT]     wait for the reset; never switch model for it
  [API ERROR]      a permanent error (auth, billing, prompt too long): stop and tell the user

Advice reaches the model on PostToolUse and PostToolUseFailure; advice born on StopFailure, whose
output the client ignores, waits in the session's outbox for the next hook that can deliver it.
A success resets the tool's count; a finished turn (Stop) resets the model count. StopFailure
also leaves sessions/<id>/stop-failure.json (the error and its text, e.g. the limit's reset) for
\`lifeline watch tmux\`; Stop removes it.

${HOOK_FLAGS_HELP}`;

async function onToolSuccess(request: HookRequest, tool: string): Promise<void> {
  const { root } = request;
  const paths = sessionPaths(root, request.input.session_id);
  for (const path of [paths.failCount(tool), paths.mcpRetry(tool)]) {
    if (!await pathExists(path)) continue; // the common case: nothing to reset, no lock needed
    await withLock(path, async () => {
      await removeFile(path, { root }).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
    }, { root, waitMs: await request.lockWaitMs() });
  }
}

/** Handles one hook event; returns context for tool events, nothing otherwise. */
export async function handle(request: HookRequest): Promise<HookOutput | null> {
  const { input, root, ctx } = request;
  if (isEvent(input, "StopFailure")) {
    const { recordTurnEvent } = await importLater<typeof ModelFallback>(
      "../lib/advice/model_fallback.ts",
      import.meta.url,
    );
    const event = {
      ts: new Date(ctx.now()).toISOString(),
      event: "StopFailure" as const,
      error: input.error,
      ...(input.prompt_id ? { prompt_id: input.prompt_id } : {}),
      ...(input.last_assistant_message ? { message: input.last_assistant_message } : {}),
    };
    // The model-fallback event first: under `claude -p` this hook may be killed any moment.
    await recordTurnEvent(root, input.session_id, event);
    // Then what the watcher reads: which error ended the turn, with its text (the reset).
    await writeFileAtomic(
      sessionPaths(root, input.session_id).stopFailure,
      JSON.stringify(event) + "\n",
      { root },
    );
    return null;
  }
  if (isEvent(input, "Stop")) {
    // A finished turn: the count resets, and no API error stands. Stop cannot carry advice.
    const stopFailure = sessionPaths(root, input.session_id).stopFailure;
    if (await pathExists(stopFailure)) await removeFile(stopFailure, { root }).catch(() => {});
    await foldIntoOutbox(request, { outcomes: [{ kind: "success", at: ctx.now() }] });
    return null;
  }
  let fresh: string[] = [];
  if (isEvent(input, "PostToolUseFailure")) {
    // The configuration is needed too: it starts loading now, beside the module.
    void request.config();
    const { onToolFailure } = await importLater<typeof ToolFallback>(
      "../lib/advice/tool_fallback.ts",
      import.meta.url,
    );
    fresh = await onToolFailure(request, input);
  } else if (isEvent(input, "PostToolUse")) {
    await onToolSuccess(request, input.tool_name);
  } else {
    return null;
  }
  const pending = adviceBlock(await gatherAdvice(request));
  return contextOutput(input.hook_event_name, [...fresh, pending].filter(Boolean).join("\n\n"));
}

export function run(ctx: Context): Promise<number> {
  return runHook(ctx, "track", handle);
}
