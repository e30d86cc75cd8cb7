/**
 * The sentences `fail handle` says: why it rolls back, why this strategy, what to do next, and
 * the exact commands to run. Policies return reasons as data; only this module words them, for
 * the console, the JSON and the reports alike.
 *
 * @module
 */

import type {
  FailureDecision,
  RollbackReason,
  Strategy,
  StrategyReason,
} from "./breaker_policy.ts";
import type { ErrorType } from "./classify_policy.ts";

/** The skills the specification names in next steps, each in one sentence (for `--help`). */
export const GLOSSARY: [string, string][] = [
  [
    "harness-diagnose-and-improve",
    "the loop's own step that reads .trace/ERROR_TRACE.md, finds the cause and fixes it",
  ],
  [
    "harness-enforce-architecture-guardrails",
    "re-run the project's architecture checks (layers, dependencies, naming) and fix what they find",
  ],
  [
    "harness-escalate-to-human",
    "stop and hand the failure report to a person; lifeline asks for it only for true blockers",
  ],
];

/** The first line of a message (git's can run to a line per file), and how many more there were. */
export function firstLine(text: string): string {
  const lines = text.trim().split("\n");
  return lines.length === 1 ? lines[0]! : `${lines[0]} (and ${lines.length - 1} more lines)`;
}

/** A size for people: `512 B`, `3.4 KB`, `12.0 MB`. */
export function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 2 ** 20 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 2 ** 20).toFixed(1)} MB`;
}

/** A command line with the project root when it is not the working directory. */
export function command(args: string, rootFlag: string | null): string {
  return `lifeline ${args}${rootFlag === null ? "" : ` --root ${rootFlag}`}`;
}

/** The exact command that records a success (closing the breaker). */
export function successCommand(task: string, skill: string, rootFlag: string | null): string {
  return command(`fail handle --success --task ${task} --skill ${skill}`, rootFlag);
}

/** Why a rollback is needed, as a phrase. */
export function rollbackReasonText(reason: RollbackReason): string {
  switch (reason.kind) {
    case "architecture":
      return "architecture error";
    case "repeated":
      return `${reason.skill} failed ${reason.count} times (>= ${reason.atCount})`;
    case "unstable":
      return "the change left the system unstable (--unstable)";
  }
}

/** Why this strategy, as a phrase. */
export function strategyReasonText(reason: StrategyReason): string {
  switch (reason.kind) {
    case "architecture":
      return "architecture error: no retry, fix the architecture first";
    case "threshold":
      return `error count ${reason.count}/${reason.threshold}: no more retries`;
    case "code":
      return `code error, count ${reason.count}/${reason.threshold}: fix and retry (at most 2 retries)`;
    case "process_first":
      return "process error: adjust (order, dependencies, waiting) and retry once";
    case "process_again":
      return "process error again after its one adjusted retry";
  }
}

/** What the loop does with each strategy, for `--help`. */
export const STRATEGIES: Record<Strategy, string> = {
  A: "fix and retry (a code error, fewer than 3 failures; at most 2 retries)",
  B: "adjust and retry once (a process error: order, dependencies, waiting)",
  C: "do not retry (an architecture error, 3 failures, or a repeated process error)",
};

function breakerSteps(
  d: FailureDecision,
  { task, skill, rootFlag }: { task: string; skill: string; rootFlag: string | null },
): string[] {
  return [
    d.taskBreaker
      ? "Stop this task: its circuit breaker is open."
      : "Stop: the global iteration budget is spent; every task stops.",
    d.escalate
      ? "This is a true blocker: trigger harness-escalate-to-human with the report."
      : "Run harness-diagnose-and-improve before any retry.",
    d.taskBreaker
      ? `Read .trace/ERROR_TRACE.md; after the fix: ${successCommand(task, skill, rootFlag)}`
      : `Read .trace/ERROR_TRACE.md; then: ${command("fail reset --global", rootFlag)}`,
  ];
}

/** The next steps of the specification's Step 10 for a decision, with exact commands. */
export function nextSteps(
  d: FailureDecision,
  { type, task, skill, rootFlag }: {
    type: ErrorType;
    task: string;
    skill: string;
    rootFlag: string | null;
  },
): string[] {
  const onSuccess = `On success run: ${successCommand(task, skill, rootFlag)}`;
  if (d.taskBreaker || d.globalBreaker) return breakerSteps(d, { task, skill, rootFlag });
  if (type === "architecture") {
    return [
      "Do not retry: trigger harness-enforce-architecture-guardrails.",
      "Fix the layering or dependency problem on top of the stable commit.",
      `Then run the task again from the start; on success: ${
        successCommand(task, skill, rootFlag)
      }`,
    ];
  }
  if (d.strategy === "A") {
    return [
      "Trigger harness-diagnose-and-improve for the code error.",
      "Apply the fix and retry the skill (strategy A, at most 2 retries).",
      onSuccess,
    ];
  }
  if (d.strategy === "B") {
    return [
      "Adjust: refresh dependencies, reorder steps, or wait for the resource.",
      "Retry the skill once (strategy B).",
      onSuccess,
    ];
  }
  return [
    "Do not retry the same way again (strategy C).",
    d.escalate
      ? "Escalate: harness-escalate-to-human."
      : "Recover automatically: diagnose, roll back or split the task.",
    "Read .trace/ERROR_TRACE.md.",
  ];
}
