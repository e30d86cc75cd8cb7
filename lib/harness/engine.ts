/**
 * The failure engine of `fail handle`: reads the harness, asks the policy (`breaker_policy.ts`)
 * what to do, and does it, in an order that keeps the record whole: the counts are saved first
 * (a refused or failed rollback, or a run killed half-way, still counts), then the breaker, the
 * rollback, the trace, the report and the event log. Returns an outcome for the command to render.
 *
 * @module
 */

import { CliError } from "../core/cli.ts";
import { relativeTo } from "../core/path.ts";
import type { Config } from "../state/config.ts";
import { harnessPaths } from "../state/layout.ts";
import {
  appendText,
  readStateText,
  removeFile,
  stateFileExists,
  withLock,
  writeFileAtomic,
  writeNewFile,
} from "../state/store.ts";
import {
  decideFailure,
  decideReset,
  decideSuccess,
  type HarnessAction,
  isoSeconds,
  type RollbackReason,
} from "./breaker_policy.ts";
import { classifyError, type ErrorType } from "./classify_policy.ts";
import {
  appendEvents,
  breakerSkill,
  checkPreconditions,
  escalationPolicy,
  type HarnessFormat,
  type HarnessState,
  loadState,
  saveState,
} from "./files.ts";
import { OperationFailedError } from "./operation.ts";
import type {
  BreakerOpenOutcome,
  GlobalBreakerOutcome,
  HandledOutcome,
  RollbackOutcome,
  SuccessOutcome,
} from "./outcome.ts";
import {
  breakerFile,
  type EngineEvent,
  failureReport,
  type Language,
  traceRecord,
} from "./records.ts";
import {
  markStable,
  planRollback,
  type Recovered,
  recoverRepo,
  rollBack,
  type RollbackSettings,
} from "./rollback.ts";
import { firstLine, nextSteps } from "./wording.ts";
import { refusedInsideGit } from "./repo.ts";

/** What the engine runs with. */
export interface EngineContext {
  root: string;
  config: Config;
  now: number;
  pid: number;
  /** `--root` as given, for the commands the output prints (null: the working directory). */
  rootFlag: string | null;
  /** The git variable set when lifeline runs from a git hook (see `insideGitCommand`). */
  insideGit?: string | null;
}

/** A failure to handle. */
export interface FailureInput {
  task: string;
  skill: string;
  error: string;
  type?: ErrorType;
  files: string[];
  unstable: boolean;
  /** Decide and plan, write nothing. */
  dryRun: boolean;
  /** Record and decide, but do not roll back. */
  noRollback: boolean;
}

/** One handling at a time per harness: the counts, the breaker and git change together. */
function locked<T>(root: string, fn: () => Promise<T>): Promise<T> {
  return withLock(harnessPaths(root).state, fn, { root, waitMs: 120_000 });
}

function format(ctx: EngineContext): HarnessFormat {
  return { threshold: ctx.config.breaker.threshold, lang: language(ctx) };
}

function language(ctx: EngineContext): Language {
  return ctx.config.harness.language;
}

/** The rollback settings of the configuration, in bytes. */
export function rollbackSettings(config: Config): RollbackSettings {
  return {
    tagPattern: config.breaker.stableTagPattern,
    maxFileBytes: config.breaker.maxBackupFileMB * 2 ** 20,
    maxTotalBytes: config.breaker.maxBackupsMB * 2 ** 20,
  };
}

/** Finishes an interrupted git operation of an earlier run; its failure is the rollback's. */
async function recover(ctx: EngineContext): Promise<Recovered | null> {
  if (ctx.insideGit) return null; // git's own index would be the one "recovered"
  try {
    return await recoverRepo(ctx.root, { now: ctx.now, pid: ctx.pid });
  } catch {
    return null; // the rollback, when there is one, meets the same problem and reports it
  }
}

/** Handles one failure (spec/handle-failure.md Steps 1-14). */
export async function handleFailure(
  ctx: EngineContext,
  input: FailureInput,
): Promise<BreakerOpenOutcome | GlobalBreakerOutcome | HandledOutcome> {
  // Recovery first: an older version killed half-way may have the harness itself set aside.
  const recovered = input.dryRun ? null : await recover(ctx);
  await checkPreconditions(ctx.root);
  if (input.dryRun) return await decide(ctx, input, null);
  return await locked(ctx.root, () => decide(ctx, input, recovered));
}

/** Asks the policy about this failure, and carries out its answer (or, in a dry run, plans it). */
async function decide(ctx: EngineContext, input: FailureInput, recovered: Recovered | null) {
  const p = harnessPaths(ctx.root);
  const state = await loadState(ctx.root, ctx.config.breaker.maxIterations);
  const classified = classifyError(input.error, input.type);
  const { state: next, actions, verdict } = decideFailure(state, {
    task: input.task,
    skill: input.skill,
    type: classified.type,
    detail: input.error.split("\n")[0]!,
    unstable: input.unstable,
    breakerOpen: stateFileExists(p.breaker(input.task), { root: ctx.root }),
  }, {
    now: ctx.now,
    threshold: ctx.config.breaker.threshold,
    rollbackAtCount: ctx.config.breaker.rollbackAtCount,
    iterationsPerHandling: 10,
    escalationPolicy: escalationPolicy(await readStateText(p.contract, { root: ctx.root })),
  });
  const base = { task: input.task, skill: input.skill, dryRun: input.dryRun, recovered };
  if (verdict.kind === "breaker_open") {
    if (!input.dryRun) await execute(ctx, actions, {});
    return {
      ...base,
      kind: "breaker_open" as const,
      breaker: relativeTo(ctx.root, p.breaker(input.task)),
      breakerSkill: await breakerSkill(ctx.root, input.task),
    };
  }
  if (verdict.kind === "global_breaker") return { ...base, ...verdict };
  const outcome = handled(ctx, input, { ...base, ...classified, decision: verdict, next });
  if (input.dryRun) {
    if (verdict.rollback) outcome.rollback = await planOnly(ctx, verdict.rollback);
    return outcome;
  }
  try {
    await saveState(ctx.root, next, format(ctx)); // counted first, whatever happens next
  } catch (error) {
    if (!isOsError(error)) throw error;
    throw new CliError(
      `could not record the failure of ${input.task}: ${errorText(error)}; nothing was rolled back`,
      "free space on the disk (or fix the cause), then run the same `lifeline fail handle` again",
    );
  }
  try {
    await execute(ctx, actions, { outcome, noRollback: input.noRollback });
  } catch (error) {
    if (outcome.rollback.status === "not_needed" && !isOsError(error)) throw error;
    throw recordsFailed(outcome, error);
  }
  return outcome;
}

/** An error the operating system reported (a full disk, a read-only file system, EIO). */
function isOsError(error: unknown): boolean {
  return error instanceof Error && typeof (error as { code?: unknown }).code === "string";
}

function errorText(error: unknown): string {
  return firstLine(error instanceof Error ? error.message : String(error));
}

/**
 * The failure is counted, but a record after it could not be written: one error that still says
 * what became of the rollback, and where the work is.
 */
function recordsFailed(outcome: HandledOutcome, error: unknown): CliError {
  const r = outcome.rollback;
  const backup = r.status === "done" ? r.done.backup : r.status === "failed" ? r.backup : null;
  const rollback = r.status === "done"
    ? "; the rollback is done"
    : r.status === "failed"
    ? `; the rollback failed (${r.undone ? "nothing changed" : "left half-done"}: ${r.message})`
    : r.status === "refused"
    ? `; the rollback was refused: ${r.message}`
    : outcome.decision.rollback
    ? "; nothing was rolled back"
    : "";
  const unfinished = r.status === "failed" && !r.undone && backup;
  return new CliError(
    `the failure of ${outcome.task} is counted, but its records could not be written: ${
      errorText(error)
    }${rollback}${backup ? `; the backup ${backup} holds the work` : ""}`,
    "free space on the disk (or fix the cause)" +
      (unfinished
        ? `, then \`lifeline fail restore ${backup}\` (or the next \`lifeline fail handle\`) ` +
          "finishes the rollback"
        : ""),
  );
}

/** The outcome of a handled failure, before its actions run. */
function handled(
  ctx: EngineContext,
  input: FailureInput,
  { next, decision, type, rule, ...base }:
    & Pick<HandledOutcome, "task" | "skill" | "dryRun" | "recovered" | "type" | "rule" | "decision">
    & { next: HarnessState },
): HandledOutcome {
  return {
    ...base,
    kind: "handled",
    ts: isoSeconds(ctx.now),
    type,
    rule,
    detail: input.error,
    files: input.files,
    decision,
    iteration: { current: next.current_iteration, max: next.max_iterations },
    rollback: { status: "not_needed" },
    report: relativeTo(ctx.root, harnessPaths(ctx.root).report(input.task)),
    nextSteps: nextSteps(decision, { ...input, type, rootFlag: ctx.rootFlag }),
  };
}

/** Carries out the policy's actions in order. */
async function execute(
  ctx: EngineContext,
  actions: HarnessAction[],
  { outcome, noRollback = false }: { outcome?: HandledOutcome; noRollback?: boolean },
): Promise<void> {
  const p = harnessPaths(ctx.root);
  const lang = language(ctx);
  for (const action of actions) {
    switch (action.kind) {
      case "log_event":
        await appendEvents(ctx.root, [action.event], lang);
        break;
      case "open_breaker":
        if (outcome) {
          await createOnce(p.breaker(outcome.task), breakerFile(outcome, lang), ctx.root);
        }
        break;
      case "rollback":
        if (outcome) {
          outcome.rollback = await runRollback(ctx, outcome.task, action.reason, noRollback);
          await appendEvents(ctx.root, rollbackEvents(ctx, outcome.rollback), lang);
        }
        break;
      case "append_trace":
        if (outcome) {
          await appendText(p.errorTrace, traceRecord(outcome, lang), { root: ctx.root });
        }
        break;
      case "write_report":
        if (outcome) {
          await writeFileAtomic(p.report(outcome.task), failureReport(outcome, lang), {
            root: ctx.root,
          });
        }
        break;
      case "close_breaker":
        await removeFile(p.breaker(action.task), { root: ctx.root }).catch((error) => {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        });
        break;
      case "mark_stable":
        await markStable(ctx.root);
        break;
    }
  }
}

async function createOnce(path: string, text: string, root: string): Promise<void> {
  try {
    await writeNewFile(path, text, { root });
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
  }
}

/** Runs the rollback. Every failure of it is an outcome, never a throw. */
async function runRollback(
  ctx: EngineContext,
  task: string,
  reason: RollbackReason,
  noRollback: boolean,
): Promise<RollbackOutcome> {
  if (noRollback) return { status: "skipped", reason };
  try {
    if (ctx.insideGit) throw refusedInsideGit(ctx.insideGit);
    const done = await rollBack(ctx.root, {
      task,
      run: { now: ctx.now, pid: ctx.pid },
      settings: rollbackSettings(ctx.config),
    });
    return { status: "done", reason, done };
  } catch (error) {
    return notDone(reason, error);
  }
}

/** The rollback's event for the log (none when it was skipped). */
function rollbackEvents(ctx: EngineContext, result: RollbackOutcome): EngineEvent[] {
  const ts = isoSeconds(ctx.now);
  if (result.status === "done") {
    return [{
      kind: "rollback_done",
      ts,
      commit: result.done.stable.commit,
      scope: result.done.scope,
    }];
  }
  return result.status === "skipped" ? [] : [{
    kind: "rollback_not_done",
    ts,
    message: "message" in result ? result.message : "",
  }];
}

function notDone(reason: RollbackReason, error: unknown): RollbackOutcome {
  if (error instanceof OperationFailedError) {
    return {
      status: "failed",
      reason,
      message: firstLine(error.message),
      hint: error.hint ?? null,
      backup: error.backup,
      undone: error.undone,
    };
  }
  if (error instanceof CliError) {
    return {
      status: "refused",
      reason,
      message: firstLine(error.message),
      hint: error.hint ?? null,
    };
  }
  return {
    status: "failed",
    reason,
    message: errorText(error),
    hint: null,
    backup: null,
    undone: false,
  };
}

async function planOnly(ctx: EngineContext, reason: RollbackReason): Promise<RollbackOutcome> {
  try {
    if (ctx.insideGit) throw refusedInsideGit(ctx.insideGit);
    return {
      status: "planned",
      reason,
      plan: await planRollback(ctx.root, rollbackSettings(ctx.config)),
    };
  } catch (error) {
    return notDone(reason, error);
  }
}

/** Records that a retry succeeded: counts cleared, breaker closed, HEAD marked stable. */
export async function handleSuccess(
  ctx: EngineContext,
  input: { task: string; skill: string; dryRun: boolean },
): Promise<SuccessOutcome> {
  const recovered = input.dryRun ? null : await recover(ctx);
  await checkPreconditions(ctx.root);
  const breaker = harnessPaths(ctx.root).breaker(input.task);
  const run = async (): Promise<SuccessOutcome> => {
    const state = await loadState(ctx.root, ctx.config.breaker.maxIterations);
    const { state: next, actions } = decideSuccess(state, input, { now: ctx.now });
    const outcome = {
      kind: "success" as const,
      ...input,
      breakerClosed: stateFileExists(breaker, { root: ctx.root }),
      recovered,
    };
    if (input.dryRun) return { ...outcome, stable: null };
    await saveState(ctx.root, next, format(ctx));
    await execute(ctx, actions, {});
    return { ...outcome, stable: await markStable(ctx.root) };
  };
  return input.dryRun ? await run() : await locked(ctx.root, run);
}

/** What `fail reset` did. */
export interface ResetOutcome {
  task: string | null;
  global: boolean;
  breakerClosed: boolean;
  skillCleared: string | null;
  iteration: { before: number; after: number; max: number };
}

/** `fail reset`: closes a task's breaker and clears its counts, and/or the global budget. */
export async function resetHarness(
  ctx: EngineContext,
  input: { task: string | null; global: boolean },
): Promise<ResetOutcome> {
  await checkPreconditions(ctx.root);
  return await locked(ctx.root, async () => {
    const state: HarnessState = await loadState(ctx.root, ctx.config.breaker.maxIterations);
    const skill = input.task === null ? null : await breakerSkill(ctx.root, input.task);
    const breakerClosed = input.task !== null &&
      stateFileExists(harnessPaths(ctx.root).breaker(input.task), { root: ctx.root });
    const { state: next, actions } = decideReset(state, { ...input, breakerSkill: skill }, {
      now: ctx.now,
    });
    await saveState(ctx.root, next, format(ctx));
    await execute(ctx, actions, {});
    return {
      ...input,
      breakerClosed,
      skillCleared: skill,
      iteration: {
        before: state.current_iteration,
        after: next.current_iteration,
        max: next.max_iterations,
      },
    };
  });
}
