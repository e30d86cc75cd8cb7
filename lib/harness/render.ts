/**
 * `fail handle`'s answer, for people (lines) and for loop scripts (one JSON object). The exit
 * code and the JSON's `stop` come from the same decision, so they always agree: exit 10 means
 * "stop retrying this task", and `escalate` says whether a person is needed for it.
 *
 * @module
 */

import { EXIT } from "../core/cli.ts";
import type { HandledOutcome, HandleOutcome, RollbackOutcome } from "./outcome.ts";
import type { Recovered } from "./rollback.ts";
import { type RollbackPlan, STABLE_REF } from "./rollback_plan.ts";
import { command, rollbackReasonText, strategyReasonText, successCommand } from "./wording.ts";

/** Whether the loop stops (exit 10) or goes on (exit 0). */
export function stops(o: HandleOutcome): boolean {
  return o.kind === "handled" ? o.decision.stop : o.kind !== "success";
}

/** The exit code of an outcome. */
export function exitCode(o: HandleOutcome): number {
  return stops(o) ? EXIT.escalate : EXIT.ok;
}

const short = (commit: string) => commit.slice(0, 12);

/** The first line of an outcome's advice: what to do now. */
export function nextStep(o: HandleOutcome, rootFlag: string | null): string {
  switch (o.kind) {
    case "success":
      return "continue with the next task";
    case "breaker_open":
      return `breaker open: ${o.breaker}; fix the cause, then \`${
        successCommand(o.task, o.breakerSkill ?? o.skill, rootFlag)
      }\` (or \`${command(`fail reset --task ${o.task}`, rootFlag)}\`)`;
    case "global_breaker":
      return `global breaker open: ${o.current}/${o.max} iterations used, so every task stops; ` +
        `reset it with \`${command("fail reset --global", rootFlag)}\``;
    case "handled":
      return o.nextSteps[0]!;
  }
}

function planJson(plan: RollbackPlan) {
  const files = [...plan.states.values()].filter((s) => s.kind === "file" || s.kind === "symlink");
  return {
    to: plan.stable.commit,
    stable: plan.stable.name,
    scope: plan.scope || ".",
    head_moves: plan.moveHead,
    reverts: plan.reverts,
    deletes: plan.deletes,
    untracked: plan.untracked,
    backup: {
      files: files.length,
      bytes: files.reduce((sum, s) => sum + (s.kind === "file" ? s.size : 0), 0),
    },
  };
}

function rollbackJson(r: RollbackOutcome) {
  if (r.status === "not_needed") return { needed: false, status: r.status, done: false };
  const base = {
    needed: true,
    status: r.status,
    done: r.status === "done",
    reason: rollbackReasonText(r.reason),
  };
  switch (r.status) {
    case "done":
      return {
        ...base,
        to: `${short(r.done.stable.commit)} (${r.done.stable.name})`,
        scope: r.done.scope || ".",
        head_moved: r.done.headMoved,
        backup: r.done.backup,
        restore: `lifeline fail restore ${r.done.backup}`,
        holds: { files: r.done.manifest.files, bytes: r.done.manifest.bytes },
      };
    case "refused":
      return { ...base, refused: r.message, hint: r.hint };
    case "failed":
      return { ...base, failed: r.message, hint: r.hint, backup: r.backup, undone: r.undone };
    case "planned":
      return { ...base, plan: planJson(r.plan) };
    case "skipped":
      return base;
  }
}

function recoveredJson(r: Recovered | null) {
  return r === null ? null : {
    finished: r.finished,
    locks_removed: r.locks,
    legacy_restored: r.legacyRestored,
  };
}

function handledJson(o: HandledOutcome) {
  const d = o.decision;
  return {
    type: o.type,
    rule: o.rule,
    count: { skill: d.skillCount, task: d.taskCount, max: d.threshold },
    rollback: rollbackJson(o.rollback),
    strategy: d.strategy,
    strategy_reason: strategyReasonText(d.strategyReason),
    breaker: d.taskBreaker ? "opened" : d.globalBreaker ? "global" : "closed",
    iteration: o.iteration,
    report: o.report,
    next_steps: o.nextSteps,
  };
}

/** The JSON `--json` prints: `stop` and `exit_code` always agree. */
export function handleJson(o: HandleOutcome, rootFlag: string | null) {
  const common = {
    outcome: o.kind,
    task: o.task,
    skill: o.skill,
    dry_run: o.dryRun,
    stop: stops(o),
    recovered: recoveredJson(o.recovered),
  };
  const tail = { next_step: nextStep(o, rootFlag), exit_code: exitCode(o) };
  switch (o.kind) {
    case "success":
      return {
        ...common,
        escalate: false,
        success: true,
        counts_cleared: true,
        breaker_closed: o.breakerClosed,
        stable: o.stable,
        ...tail,
      };
    case "breaker_open":
      return {
        ...common,
        escalate: true,
        breaker: "open",
        breaker_file: o.breaker,
        strategy: "C",
        ...tail,
      };
    case "global_breaker":
      return {
        ...common,
        escalate: true,
        breaker: "global",
        strategy: "C",
        iteration: { current: o.current, max: o.max },
        ...tail,
      };
    case "handled":
      return { ...common, escalate: o.decision.escalate, ...handledJson(o), ...tail };
  }
}

function listLine(label: string, paths: string[], max = 8): string[] {
  if (paths.length === 0) return [];
  const shown = paths.slice(0, max).join(", ");
  return [`    ${label}: ${shown}${paths.length > max ? ` and ${paths.length - max} more` : ""}`];
}

function rollbackLines(r: RollbackOutcome): string[] {
  switch (r.status) {
    case "not_needed":
      return ["  rollback: no"];
    case "skipped":
      return [`  rollback: needed (${rollbackReasonText(r.reason)}), skipped (--no-rollback)`];
    case "refused":
      return [`  rollback: refused: ${r.message}${r.hint ? ` (${r.hint})` : ""}`];
    case "failed":
      return [`  rollback: failed: ${r.message}${r.hint ? `; ${r.hint}` : ""}`];
    case "done": {
      const { done } = r;
      const to = `${short(done.stable.commit)} (${done.stable.name})`;
      return [
        done.headMoved
          ? `  rollback: yes, to ${to}; work saved as ${done.backup}`
          : `  rollback: yes, ${done.scope}/ restored from ${to}, HEAD did not move; work saved as ${done.backup}`,
        `  restore with: lifeline fail restore ${done.backup}`,
      ];
    }
    case "planned": {
      const plan = planJson(r.plan);
      return [
        `  rollback: would go to ${short(plan.to)} (${plan.stable}) for: ${
          rollbackReasonText(r.reason)
        }`,
        `    scope: ${
          plan.head_moves
            ? "the whole repository; the branch moves (git reset --hard)"
            : `${plan.scope}/ only; HEAD stays`
        }`,
        ...listLine("reverts", plan.reverts),
        ...listLine("deletes", plan.deletes),
        ...listLine("overwrites untracked", plan.untracked),
        `    backup would hold: ${plan.backup.files} files, ${plan.backup.bytes} bytes`,
      ];
    }
  }
}

function recoveredLines(r: Recovered | null): string[] {
  if (r === null) return [];
  const lines = r.finished
    ? [
      `note: finished the ${r.finished.op} that run ${r.finished.pid} left half-done (${r.finished.step}); the state it left is saved as ${
        r.finished.savedFirst ?? "-"
      }`,
    ]
    : [];
  if (r.locks.length > 0) lines.push(`note: removed the locks it left: ${r.locks.join(", ")}`);
  if (r.legacyRestored.length > 0) {
    lines.push(`note: put back ${r.legacyRestored.length} files an older lifeline had set aside`);
  }
  return lines;
}

/** The lines for people. */
export function handleText(o: HandleOutcome, rootFlag: string | null): string[] {
  const head = [
    ...(o.dryRun ? ["dry run: nothing was written"] : []),
    ...recoveredLines(o.recovered),
  ];
  switch (o.kind) {
    case "success":
      return [
        ...head,
        `Recorded a success for ${o.task}: counts cleared${
          o.breakerClosed ? ", breaker closed" : ""
        }` +
        (o.stable ? `, HEAD ${short(o.stable)} marked stable (${STABLE_REF})` : ""),
      ];
    case "breaker_open":
    case "global_breaker":
      return [
        ...head,
        `${
          o.kind === "global_breaker" ? "Global breaker" : "Breaker"
        } open for ${o.task}: nothing handled. ${nextStep(o, rootFlag)}`,
      ];
    case "handled": {
      const d = o.decision;
      return [
        ...head,
        `harness-handle-failure: ${o.task} (${o.skill})`,
        `  error type: ${o.type} (rule: ${o.rule})`,
        `  error count: ${d.count}/${d.threshold}`,
        ...rollbackLines(o.rollback),
        `  retry: strategy ${d.strategy} (${strategyReasonText(d.strategyReason)})`,
        `  breaker: ${
          d.taskBreaker ? "opened" : d.globalBreaker ? "global breaker open" : "not triggered"
        }`,
        `  loop: ${d.stop ? "stop (exit 10)" : "retry (exit 0)"}; ${
          d.escalate ? "escalate to a person" : "no person needed"
        }`,
        `  report: ${o.report}`,
        `  next: ${o.nextSteps[0]}`,
      ];
    }
  }
}
