/**
 * What `fail handle` decides (spec/handle-failure.md Steps 5-8, 11-12): the counts, whether to roll
 * back, which retry strategy, whether a circuit breaker opens, whether the loop stops and whether a
 * human is needed. Pure: `decideX(state, event, { now, ...settings }) → { state, actions, … }`;
 * the actions are data that the engine (`engine.ts`) carries out, and the reasons are data that
 * the renderers (`wording.ts`) turn into sentences.
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
  /** Newest last, at most 10: `## 最近事件` of GLOBAL_STATE.md. */
  recent_events: string[];
}

/** The retry strategies of the specification. */
export type Strategy = "A" | "B" | "C";

/** A failure as `fail handle` receives it, with what the engine found on disk. */
export interface FailureEvent {
  task: string;
  skill: string;
  type: ErrorType;
  /** The first line of the error, for the event log. */
  detail: string;
  /** --unstable: the change left the system unstable. */
  unstable: boolean;
  /** The task's breaker file exists. */
  breakerOpen: boolean;
}

/** Why a rollback is needed. */
export type RollbackReason =
  | { kind: "architecture" }
  | { kind: "repeated"; skill: string; count: number; atCount: number }
  | { kind: "unstable" };

/** Why this strategy. */
export type StrategyReason =
  | { kind: "architecture" }
  | { kind: "threshold"; count: number; threshold: number }
  | { kind: "code"; count: number; threshold: number }
  | { kind: "process_first" }
  | { kind: "process_again" };

/** One line of EVENT_LOG.md, as data. */
export type HarnessEvent =
  | { kind: "failure"; ts: string; skill: string; task: string; detail: string }
  | { kind: "breaker_open_unhandled"; ts: string; task: string }
  | { kind: "breaker_triggered"; ts: string; task: string; count: number; threshold: number }
  | { kind: "retry"; ts: string; skill: string; count: number }
  | { kind: "retry_succeeded"; ts: string; task: string }
  | { kind: "reset"; ts: string; task: string | null; global: boolean };

/** What the engine does, in order. The rollback's own event is logged with its result. */
export type HarnessAction =
  | { kind: "rollback"; reason: RollbackReason }
  | { kind: "open_breaker" }
  | { kind: "close_breaker"; task: string }
  | { kind: "mark_stable" }
  | { kind: "append_trace" }
  | { kind: "write_report" }
  | { kind: "log_event"; event: HarnessEvent };

/** The decision for a failure that is handled. */
export interface FailureDecision {
  kind: "handled";
  skillCount: number;
  taskCount: number;
  /** The larger of the two: what the threshold is compared with. */
  count: number;
  threshold: number;
  /** The N of this failure's `## 失败记录 #N`. */
  record: number;
  rollback: RollbackReason | null;
  strategy: Strategy;
  strategyReason: StrategyReason;
  /** The task's breaker opens now (a count reached the threshold). */
  taskBreaker: boolean;
  /** current_iteration has reached max_iterations with this handling. */
  globalBreaker: boolean;
  /** Stop retrying this task: exit 10. Strategy C, or a breaker that opened. */
  stop: boolean;
  /** A human is needed: only true blockers under `true_blockers_only`. */
  escalate: boolean;
}

/** The verdict: answered at once (a breaker is open), or handled. */
export type FailureVerdict =
  | { kind: "breaker_open" }
  | { kind: "global_breaker"; current: number; max: number }
  | FailureDecision;

/** Settings (config.breaker and the execution contract). */
export interface FailureSettings {
  now: number;
  threshold: number;
  rollbackAtCount: number;
  /** Iterations one handling costs (the specification: about 10). */
  iterationsPerHandling: number;
  escalationPolicy: string;
}

/** `date -Iseconds` style: `2026-11-30T18:56:00+00:00`. */
export function isoSeconds(now: number): string {
  return new Date(now).toISOString().replace(/\.\d{3}Z$/, "+00:00");
}

function withEvent<T extends HarnessCounts>(state: T, line: string): T {
  return { ...state, recent_events: [...state.recent_events, line].slice(-10) };
}

function rollbackReason(event: FailureEvent, skillCount: number, atCount: number) {
  if (event.type === "architecture") return { kind: "architecture" } as const;
  if (skillCount >= atCount) {
    return { kind: "repeated", skill: event.skill, count: skillCount, atCount } as const;
  }
  return event.unstable ? { kind: "unstable" } as const : null;
}

function strategyFor(
  event: FailureEvent,
  { count, taskCount, threshold }: { count: number; taskCount: number; threshold: number },
): { strategy: Strategy; strategyReason: StrategyReason } {
  if (event.type === "architecture") {
    return { strategy: "C", strategyReason: { kind: "architecture" } };
  }
  if (count >= threshold) {
    return { strategy: "C", strategyReason: { kind: "threshold", count, threshold } };
  }
  if (event.type === "code") {
    return { strategy: "A", strategyReason: { kind: "code", count, threshold } };
  }
  return taskCount <= 1
    ? { strategy: "B", strategyReason: { kind: "process_first" } }
    : { strategy: "C", strategyReason: { kind: "process_again" } };
}

/** One more failure: counts, then everything decided from them. */
export function decideFailure<T extends HarnessCounts>(
  before: T,
  event: FailureEvent,
  settings: FailureSettings,
): { state: T; actions: HarnessAction[]; verdict: FailureVerdict } {
  const ts = isoSeconds(settings.now);
  if (event.breakerOpen) {
    return {
      state: before,
      actions: [failureEvent(event, ts), {
        kind: "log_event",
        event: { kind: "breaker_open_unhandled", ts, task: event.task },
      }],
      verdict: { kind: "breaker_open" },
    };
  }
  const { current_iteration: current, max_iterations: max } = before;
  if (current >= max) {
    return { state: before, actions: [], verdict: { kind: "global_breaker", current, max } };
  }
  const { state, skillCount, taskCount } = counted(before, event, settings, ts);
  const count = Math.max(skillCount, taskCount);
  const threshold = settings.threshold;
  const taskBreaker = count >= threshold;
  const globalBreaker = state.current_iteration >= state.max_iterations;
  const { strategy, strategyReason } = strategyFor(event, { count, taskCount, threshold });
  // Under true_blockers_only, only what cannot recover by itself goes to a human: an open
  // breaker (repeated failure) or the global iteration budget spent.
  const escalate = settings.escalationPolicy === "true_blockers_only"
    ? taskBreaker || globalBreaker
    : strategy === "C";
  const verdict: FailureDecision = {
    kind: "handled",
    skillCount,
    taskCount,
    count,
    threshold,
    record: state.failure_records,
    rollback: rollbackReason(event, skillCount, settings.rollbackAtCount),
    strategy,
    strategyReason,
    taskBreaker,
    globalBreaker,
    stop: strategy === "C" || taskBreaker || globalBreaker,
    escalate,
  };
  return { state, actions: failureActions(event, ts, verdict), verdict };
}

/** The state with this failure counted, its iterations spent and its event recorded. */
function counted<T extends HarnessCounts>(
  before: T,
  event: FailureEvent,
  settings: FailureSettings,
  ts: string,
): { state: T; skillCount: number; taskCount: number } {
  const skillCount = (before.skills[event.skill] ?? 0) + 1;
  const taskCount = (before.tasks[event.task] ?? 0) + 1;
  const state = withEvent({
    ...before,
    skills: { ...before.skills, [event.skill]: skillCount },
    tasks: { ...before.tasks, [event.task]: taskCount },
    current_iteration: before.current_iteration + settings.iterationsPerHandling,
    failure_records: before.failure_records + 1,
  }, `${ts} | harness-handle-failure | FAILURE_HANDLED | ${event.task} | FAILURE`);
  return { state, skillCount, taskCount };
}

function failureEvent(event: FailureEvent, ts: string): HarnessAction {
  const { skill, task, detail } = event;
  return { kind: "log_event", event: { kind: "failure", ts, skill, task, detail } };
}

/** The breaker first (the decision), then the log, the rollback and the records. */
function failureActions(event: FailureEvent, ts: string, d: FailureDecision): HarnessAction[] {
  const announce: HarnessEvent | null = d.taskBreaker
    ? { kind: "breaker_triggered", ts, task: event.task, count: d.count, threshold: d.threshold }
    : d.strategy !== "C"
    ? { kind: "retry", ts, skill: event.skill, count: d.count }
    : null;
  return [
    ...(d.taskBreaker ? [{ kind: "open_breaker" } as const] : []),
    failureEvent(event, ts),
    ...(d.rollback ? [{ kind: "rollback", reason: d.rollback } as const] : []),
    ...(announce ? [{ kind: "log_event", event: announce } as const] : []),
    { kind: "append_trace" },
    { kind: "write_report" },
  ];
}

/** A retry succeeded: the task's and the skill's counts are cleared, its breaker closed. */
export function decideSuccess<T extends HarnessCounts>(
  before: T,
  event: { task: string; skill: string },
  { now }: { now: number },
): { state: T; actions: HarnessAction[] } {
  const ts = isoSeconds(now);
  const skills = { ...before.skills };
  const tasks = { ...before.tasks };
  delete skills[event.skill];
  delete tasks[event.task];
  return {
    state: withEvent(
      { ...before, skills, tasks },
      `${ts} | harness-handle-failure | RETRY_SUCCEEDED | ${event.task} | SUCCESS`,
    ),
    actions: [
      { kind: "close_breaker", task: event.task },
      { kind: "mark_stable" },
      { kind: "log_event", event: { kind: "retry_succeeded", ts, task: event.task } },
    ],
  };
}

/**
 * `fail reset`: a task's count (and the count of the skill its breaker names) cleared and its
 * breaker closed, and/or the global iteration budget given back.
 */
export function decideReset<T extends HarnessCounts>(
  before: T,
  event: { task: string | null; breakerSkill: string | null; global: boolean },
  { now }: { now: number },
): { state: T; actions: HarnessAction[] } {
  const skills = { ...before.skills };
  const tasks = { ...before.tasks };
  if (event.task !== null) delete tasks[event.task];
  if (event.breakerSkill !== null) delete skills[event.breakerSkill];
  const state = {
    ...before,
    skills,
    tasks,
    current_iteration: event.global ? 0 : before.current_iteration,
  };
  const ts = isoSeconds(now);
  return {
    state,
    actions: [
      ...(event.task !== null ? [{ kind: "close_breaker", task: event.task } as const] : []),
      { kind: "log_event", event: { kind: "reset", ts, task: event.task, global: event.global } },
    ],
  };
}
