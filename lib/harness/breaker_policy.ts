/**
 * What `fail handle` decides (spec/handle-failure.md Steps 5-8): the counts, whether to roll back,
 * which retry strategy, whether a circuit breaker opens, and whether to escalate. A pure function
 * of (state, failure).
 *
 * @module
 */

import type { ErrorType } from "./classify_policy.ts";

/** Failure counts, the JSON source of truth behind GLOBAL_STATE.md and ITERATION_COUNTER.md. */
export interface HarnessCounts {
  skills: Record<string, number>;
  tasks: Record<string, number>;
  current_iteration: number;
  max_iterations: number;
  /** The N of the next `## 失败记录 #N`, minus one. */
  failure_records: number;
}

/** The retry strategies of the specification. */
export type Strategy = "A" | "B" | "C";

/** A failure as `fail handle` receives it. */
export interface FailureEvent {
  task: string;
  skill: string;
  type: ErrorType;
  /** --unstable: the change left the system unstable. */
  unstable: boolean;
}

/** The decision. */
export interface FailureDecision<T extends HarnessCounts = HarnessCounts> {
  /** The state after this failure (anything else it holds is kept). */
  counts: T;
  skillCount: number;
  taskCount: number;
  record: number;
  rollback: boolean;
  rollbackReason: string | null;
  strategy: Strategy;
  strategyReason: string;
  /** The task's breaker opens now (a count reached the threshold). */
  taskBreaker: boolean;
  /** current_iteration has reached max_iterations. */
  globalBreaker: boolean;
  /** Escalate to a human (only true blockers under `true_blockers_only`). */
  escalate: boolean;
}

/** Settings (config.breaker). */
export interface FailurePolicy {
  threshold: number;
  rollbackAtCount: number;
  /** Iterations one handling costs (the specification: about 10). */
  iterationsPerHandling: number;
  escalationPolicy: string;
}

/** Counts after one more failure, and everything decided from them. */
export function decideFailure<T extends HarnessCounts>(
  before: T,
  event: FailureEvent,
  policy: FailurePolicy,
): FailureDecision<T> {
  const skillCount = (before.skills[event.skill] ?? 0) + 1;
  const taskCount = (before.tasks[event.task] ?? 0) + 1;
  const counts: T = {
    ...before,
    skills: { ...before.skills, [event.skill]: skillCount },
    tasks: { ...before.tasks, [event.task]: taskCount },
    current_iteration: before.current_iteration + policy.iterationsPerHandling,
    failure_records: before.failure_records + 1,
  };
  const rollbackReason = event.type === "architecture"
    ? "architecture error"
    : skillCount >= policy.rollbackAtCount
    ? `${event.skill} failed ${skillCount} times (>= ${policy.rollbackAtCount})`
    : event.unstable
    ? "the change left the system unstable (--unstable)"
    : null;
  const count = Math.max(skillCount, taskCount);
  const taskBreaker = count >= policy.threshold;
  const globalBreaker = counts.current_iteration >= counts.max_iterations;
  let strategy: Strategy;
  let strategyReason: string;
  if (event.type === "architecture") {
    strategy = "C";
    strategyReason = "architecture error: no retry, fix the architecture first";
  } else if (taskBreaker) {
    strategy = "C";
    strategyReason = `error count ${count}/${policy.threshold}: no more retries`;
  } else if (event.type === "code") {
    strategy = "A";
    strategyReason =
      `code error, count ${count}/${policy.threshold}: fix and retry (at most 2 retries)`;
  } else if (taskCount <= 1) {
    strategy = "B";
    strategyReason = "process error: adjust (order, dependencies, waiting) and retry once";
  } else {
    strategy = "C";
    strategyReason = "process error again after its one adjusted retry";
  }
  // Under true_blockers_only, only what cannot recover by itself goes to a human: an open
  // breaker (repeated failure) or the global iteration budget spent.
  const trueBlocker = taskBreaker || globalBreaker;
  const escalate = policy.escalationPolicy === "true_blockers_only"
    ? trueBlocker
    : strategy === "C";
  return {
    counts,
    skillCount,
    taskCount,
    record: counts.failure_records,
    rollback: rollbackReason !== null,
    rollbackReason,
    strategy,
    strategyReason,
    taskBreaker,
    globalBreaker,
    escalate,
  };
}

/** Counts after a retry succeeded: the task's and the skill's are cleared. */
export function afterSuccess<T extends HarnessCounts>(before: T, task: string, skill: string): T {
  const skills = { ...before.skills };
  const tasks = { ...before.tasks };
  delete skills[skill];
  delete tasks[task];
  return { ...before, skills, tasks };
}
