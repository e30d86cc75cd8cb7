/**
 * What the failure engine (`engine.ts`) returns, for the command and the reports to render:
 * one discriminated type per answer, no loose objects.
 *
 * @module
 */

import type { FailureDecision, RollbackReason } from "./breaker_policy.ts";
import type { ErrorType } from "./classify_policy.ts";
import type { Recovered, RollbackDone } from "./rollback.ts";
import type { RollbackPlan } from "./rollback_plan.ts";

/** What became of the rollback a decision asked for. */
export type RollbackOutcome =
  | { status: "not_needed" }
  | { status: "skipped"; reason: RollbackReason }
  | { status: "planned"; reason: RollbackReason; plan: RollbackPlan }
  | { status: "done"; reason: RollbackReason; done: RollbackDone }
  | { status: "refused"; reason: RollbackReason; message: string; hint: string | null }
  | {
    status: "failed";
    reason: RollbackReason;
    message: string;
    hint: string | null;
    /** The backup that holds the work, when it was saved before the failure. */
    backup: string | null;
    /** Whether the repository was put back as it was. */
    undone: boolean;
  };

/** The fields every answer to a failure has. */
interface FailureOutcomeBase {
  task: string;
  skill: string;
  /** `--dry-run`: nothing was written. */
  dryRun: boolean;
  /** An interrupted rollback or restore of an earlier run, finished first. */
  recovered: Recovered | null;
}

/** The task's breaker is open: answered at once, nothing counted. */
export interface BreakerOpenOutcome extends FailureOutcomeBase {
  kind: "breaker_open";
  /** The breaker file, relative to the root, and the skill it names. */
  breaker: string;
  breakerSkill: string | null;
}

/** The global iteration budget is spent: every task is answered at once. */
export interface GlobalBreakerOutcome extends FailureOutcomeBase {
  kind: "global_breaker";
  current: number;
  max: number;
}

/** A failure handled: classified, recorded, counted, rolled back when needed, decided. */
export interface HandledOutcome extends FailureOutcomeBase {
  kind: "handled";
  ts: string;
  type: ErrorType;
  rule: string;
  detail: string;
  files: string[];
  decision: FailureDecision;
  iteration: { current: number; max: number };
  rollback: RollbackOutcome;
  /** The report file, relative to the root. */
  report: string;
  nextSteps: string[];
}

/** A retry that succeeded, recorded. */
export interface SuccessOutcome {
  kind: "success";
  task: string;
  skill: string;
  dryRun: boolean;
  breakerClosed: boolean;
  /** HEAD, now marked stable (null outside git). */
  stable: string | null;
  recovered: Recovered | null;
}

/** Every answer of `fail handle`. */
export type HandleOutcome =
  | SuccessOutcome
  | BreakerOpenOutcome
  | GlobalBreakerOutcome
  | HandledOutcome;
