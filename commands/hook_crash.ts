/**
 * `lifeline hook crash`: crash-state recovery when a session starts (spec/error-recovery.md §5.2).
 * Repairs what earlier sessions left stale, and tells the new session, in one block, what it found
 * and did. It also records the session's model for model-fallback advice, and folds the failures
 * that earlier StopFailure hooks could not record (from the transcript's tail).
 *
 * @module
 */

import type { Context } from "../lib/core/cli.ts";
import { type Finding, latestOtherSession, scanLeftovers } from "../lib/sessions/crash_recovery.ts";
import { surveySessions } from "../lib/sessions/survey.ts";
import { foldTurns } from "../lib/advice/model_fallback.ts";
import {
  contextOutput,
  HOOK_FLAGS_HELP,
  type HookOutput,
  type HookRequest,
  isEvent,
  logHookProblem,
  runHook,
} from "../lib/claude/hook_io.ts";
import { joinPath } from "../lib/core/path.ts";
import { sessionPaths } from "../lib/state/layout.ts";
import { gatherAdvice, queueAdvice } from "../lib/advice/pending_advice.ts";
import type * as RecoveryLog from "../lib/state/recovery_log.ts";
import { importLater } from "../lib/core/lazy.ts";
import { readSessionRecord } from "../lib/sessions/registry.ts";
import { sightSession } from "../lib/sessions/sighting.ts";
import { pathExists, writeFileAtomic } from "../lib/state/store.ts";

/** Finished sessions pruned per session start at most; the daemon prunes the rest. */
const MAX_PRUNES = 50;

export const help = `Usage: lifeline hook crash [--root DIR] [--background]

Claude Code hook for SessionStart (every source: startup, resume, clear, compact), or for the
first UserPromptSubmit of a session (later prompts add nothing). Scans the project for what
crashed sessions left behind and repairs what is stale:

  sessions/*/ralph.json   active but last checked over 2 h ago: set active=false,
                          deactivation_reason="stale" (every other field kept); a corrupt one
                          is moved aside to <name>.corrupt-<time>, never rewritten
  .claims/*.lock          older than 15 min: deleted, unless its recorded owner pid still runs
  .working-state/current-plan.md
                          exists: the session is told to read it before anything else
  sessions/*/handoffs/scavenged.md
                          rescued by \`lifeline daemon stale\`: offered once, while the session
                          is still scavenged (not while it is alive again), and only as the
                          daemon wrote it (its ledger in lifeline's state directory says so):
                          a handoff that came with the repository is never offered
  sessions/*/             finished (ended, or scavenged with the handoff delivered) and idle for
                          longer than stale.pruneAfterDays (7): deleted, up to ${MAX_PRUNES} per start;
                          never the session starting now

The session starting is first recorded as alive, as \`lifeline hook heartbeat\` records it (a
session resumed days after it ended is so never taken for a finished one).

Also delivers the session's pending advice, records its model (SessionStart "model") for model
fallback, and counts API errors found in the transcript that no StopFailure hook recorded.
Prints one context block starting with [CRASH RECOVERY], or nothing when there is nothing to say.
Every action is logged to logs/error-recovery.log.

${HOOK_FLAGS_HELP}`;

/** How recent a previous session must be for its failures to matter to this one. */
const PREVIOUS_SESSION_WINDOW_MS = 60 * 60_000;

/** At most this many findings are listed; the log has them all. */
const MAX_LINES = 25;

function contextBlock(findings: Finding[], advice: string[]): string {
  const lines = findings.map((f) => f.line);
  const shown = lines.slice(0, MAX_LINES);
  if (lines.length > shown.length) {
    shown.push(`… and ${lines.length - shown.length} more (see logs/error-recovery.log)`);
  }
  return [
    "[CRASH RECOVERY] Earlier sessions left state behind; lifeline found and did this:",
    ...shown.map((line) => `- ${line}`),
    ...advice.map((text) => `- ${text}`),
  ].join("\n");
}

/** Scans, repairs and reports; under UserPromptSubmit only once per session. */
export async function handle(request: HookRequest): Promise<HookOutput | null> {
  const { input, root, ctx } = request;
  const session = input.session_id;
  const marker = joinPath(sessionPaths(root, session).dir, "crash-checked");
  const now = ctx.now();
  if (isEvent(input, "UserPromptSubmit")) {
    if (await pathExists(marker)) return null; // this session was already checked
  } else if (!isEvent(input, "SessionStart")) {
    return null;
  }
  // A hint, not state: lost in a power cut, it costs one more scan at the next prompt.
  await writeFileAtomic(marker, new Date(now).toISOString() + "\n", { root, durable: false });

  const config = await request.config();
  const waitMs = await request.lockWaitMs();
  // First, this session is seen alive: a session resumed days after it ended (`--resume`, the
  // same id) is finished, and old enough to prune, until its own hooks say otherwise. Recorded
  // now, neither this scan nor the daemon takes it for a finished one before its first tool call.
  await sightSession(request, { waitMs }).catch((error) =>
    logHookProblem(ctx.env, {
      command: "hook crash",
      message: "could not record this session as alive",
      error,
      root,
      session,
    })
  );
  const { sessions, skipped } = await surveySessions(root, { now });
  if (skipped.length > 0) {
    await logHookProblem(ctx.env, {
      command: "hook crash",
      message: `skipped entries of sessions/ that are not sessions: ${
        skipped.slice(0, 5).map((s) => `${JSON.stringify(s.name)} (${s.reason})`).join(", ")
      }${skipped.length > 5 ? ` and ${skipped.length - 5} more` : ""}`,
      root,
      session,
    });
  }
  const findings = await scanLeftovers(root, sessions, {
    now,
    loopStaleSeconds: config.crash.loopStaleSeconds,
    claimStaleMinutes: config.crash.claimStaleMinutes,
    waitMs,
    hostname: ctx.hostname(),
    sessionId: session,
    staleAfterSeconds: config.stale.afterSeconds,
    pruneAfterSeconds: config.stale.pruneAfterDays * 86_400,
    maxPrunes: MAX_PRUNES,
    env: ctx.env,
  });

  // A loop of `claude -p` runs starts a new session each time, and its StopFailure hooks are
  // killed at exit: the previous run's transcript is where its failures are.
  const previous = latestOtherSession(sessions, {
    sessionId: session,
    now,
    withinMs: PREVIOUS_SESSION_WINDOW_MS,
  });
  const record = previous ? await readSessionRecord(root, previous) : undefined;
  const hasEvents = sessions.find((s) => s.id === previous)?.names.has("events.jsonl");
  if (previous && (record?.transcript_path || hasEvents)) {
    const folded = await foldTurns(root, previous, {
      transcriptPath: record?.transcript_path ?? undefined,
    }, { config: config.modelFallback, now, waitMs });
    await queueAdvice(
      request,
      "hook crash",
      folded.advice.map((text) => `The previous session (${previous}): ${text}`),
    );
  }
  const advice = await gatherAdvice(request, {
    model: isEvent(input, "SessionStart") ? input.model : undefined,
    transcriptPath: input.transcript_path,
  });

  const ts = new Date(now).toISOString();
  const records = [
    ...findings.map((f) => ({
      ts,
      session,
      kind: f.kind,
      action: f.action,
      target: f.target,
      result: f.result,
    })),
    ...advice.map((text) => ({
      ts,
      session,
      kind: "advice",
      action: "delivered",
      target: session,
      result: text,
    })),
  ];
  if (records.length > 0) {
    const { logRecovery } = await importLater<typeof RecoveryLog>(
      "../lib/state/recovery_log.ts",
      import.meta.url,
    ); // most starts find nothing to log
    await logRecovery(root, ...records);
  }
  const shown = findings.filter((f) => !f.quiet);
  if (shown.length === 0 && advice.length === 0) return null;
  return contextOutput(input.hook_event_name, contextBlock(shown, advice));
}

export function run(ctx: Context): Promise<number> {
  return runHook(ctx, "crash", handle);
}
