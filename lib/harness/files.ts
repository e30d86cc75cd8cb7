/**
 * The loop harness files of spec/handle-failure.md, in their formats: `.EnjoyHarness/`
 * (GLOBAL_STATE.md, EVENT_LOG.md, ITERATION_COUNTER.md, SKILL_REGISTRY.md, EXECUTION_CONTRACT.md,
 * `.circuit-breaker-task-<ID>`) and `.trace/` (ERROR_TRACE.md, FAILURE_REPORT_<ID>.md). The
 * numbers live in `.EnjoyHarness/handle-failure.json` and are rendered into the markdown; the
 * markdown headings and field names are the specification's, so harness users find them.
 *
 * @module
 */

import * as z from "zod";
import { lazy } from "../core/lazy.ts";
import { harnessPaths } from "../state/layout.ts";
import type { ErrorType } from "./classify_policy.ts";
import type { FailureDecision, HarnessCounts } from "./breaker_policy.ts";
import { ensureDir, jsonCodec, stateFileExists, writeFileAtomic } from "../state/store.ts";

/** The JSON source of truth. */
export interface HarnessState extends HarnessCounts {
  version: 1;
  /** Newest last, at most 10: `## 最近事件` of GLOBAL_STATE.md. */
  recent_events: string[];
}

const stateSchema = lazy(() =>
  z.looseObject({
    version: z.literal(1),
    skills: z.record(z.string(), z.number()),
    tasks: z.record(z.string(), z.number()),
    current_iteration: z.number(),
    max_iterations: z.number(),
    failure_records: z.number(),
    recent_events: z.array(z.string()),
  })
);

/** Codec for `handle-failure.json`. */
export const harnessStateCodec = jsonCodec<HarnessState>((value) =>
  stateSchema().parse(value) as HarnessState
);

/** The harness a fresh `fail init` creates. */
export function emptyHarnessState(maxIterations: number): HarnessState {
  return {
    version: 1,
    skills: {},
    tasks: {},
    current_iteration: 0,
    max_iterations: maxIterations,
    failure_records: 0,
    recent_events: [],
  };
}

/** `date -Iseconds` style: `2026-11-30T18:56:00+00:00`. */
export function isoSeconds(now: number): string {
  return new Date(now).toISOString().replace(/\.\d{3}Z$/, "+00:00");
}

/** The files `fail handle` needs, relative to the root. */
export function requiredFiles(root: string): string[] {
  const p = harnessPaths(root);
  return [p.skillRegistry, p.contract, p.globalState, p.eventLog, p.iterationCounter, p.errorTrace];
}

const BREAKER_SKILL = "harness-enable-circuit-breaker";
const THIS_SKILL = "harness-handle-failure";

/** True when SKILL_REGISTRY.md marks the circuit-breaker skill done (`- [x] harness-enable-…`). */
export function circuitBreakerEnabled(registry: string): boolean {
  return new RegExp(`^\\s*[-*]\\s*\\[[xX]\\]\\s*${BREAKER_SKILL}\\b`, "m").test(registry);
}

/** The contract's `human_escalation_policy` (default `true_blockers_only`). */
export function escalationPolicy(contract: string): string {
  return /human_escalation_policy:\s*([A-Za-z_]+)/.exec(contract)?.[1] ?? "true_blockers_only";
}

/** SKILL_REGISTRY.md with this skill marked done (the line edited in place, or added). */
export function markSkillDone(registry: string): string {
  const line = `- [x] ${THIS_SKILL} - 失败处理技能 ✅`;
  const existing = new RegExp(`^\\s*[-*]\\s*\\[[ xX]\\]\\s*${THIS_SKILL}\\b.*$`, "m");
  if (existing.test(registry)) return registry.replace(existing, line);
  return `${registry.replace(/\n*$/, "")}\n${line}\n`;
}

/** ITERATION_COUNTER.md, rendered from the state. */
export function renderIterationCounter(state: HarnessState): string {
  return `# Iteration Counter\n\ncurrent_iteration: ${state.current_iteration}\nmax_iterations: ${state.max_iterations}\n`;
}

/**
 * GLOBAL_STATE.md with its `## 技能错误计数` and `## 最近事件` sections rendered from the state;
 * every other section of the file is kept as it is.
 */
export function renderGlobalState(
  existing: string,
  state: HarnessState,
  threshold: number,
): string {
  const counts = Object.entries(state.skills).sort(([a], [b]) => a.localeCompare(b));
  const sections: Record<string, string> = {
    "技能错误计数": counts.length === 0
      ? "(无)"
      : counts.map(([skill, n]) => `- ${skill}: ${n}/${threshold}`).join("\n"),
    "最近事件": state.recent_events.length === 0
      ? "(无)"
      : state.recent_events.map((e) => `- ${e}`).join("\n"),
  };
  let text = existing.trim() === "" ? "# Global State\n" : existing;
  for (const [title, body] of Object.entries(sections)) {
    const section = new RegExp(`^## ${title}\\s*\\n[\\s\\S]*?(?=^## |(?![\\s\\S]))`, "m");
    const rendered = `## ${title}\n${body}\n\n`;
    text = section.test(text)
      ? text.replace(section, rendered)
      : `${text.replace(/\n*$/, "")}\n\n${rendered}`;
  }
  return text.replace(/\n{3,}$/, "\n").replace(/\n*$/, "\n");
}

/** One line of EVENT_LOG.md: `{TIMESTAMP} | {KIND} | {skill} | {detail} | {status}`. */
export function eventLine(ts: string, kind: string, detail: string, status: string): string {
  return `${ts} | ${kind} | ${THIS_SKILL} | ${detail} | ${status}`;
}

const TYPE_NAMES: Record<ErrorType, string> = {
  code: "代码错误 (code)",
  architecture: "架构错误 (architecture)",
  process: "流程错误 (process)",
};

/** What a handled failure needs for its records. */
export interface HandledFailure {
  ts: string;
  task: string;
  skill: string;
  type: ErrorType;
  rule: string;
  detail: string;
  files: string[];
  decision: FailureDecision;
  threshold: number;
  rollback: { to: string; backup: string; restore: string } | { refused: string } | null;
}

/** `## 失败记录 #N` for ERROR_TRACE.md, with the specification's fields. */
export function traceRecord(f: HandledFailure): string {
  const count = Math.max(f.decision.skillCount, f.decision.taskCount);
  return `
## 失败记录 #${f.decision.record}

### 基本信息
- 时间: ${f.ts}
- 任务ID: ${f.task}
- 技能: ${f.skill}
- 错误类型: ${TYPE_NAMES[f.type]}

### 错误详情
${f.detail}

### 上下文
- 当前迭代: ${f.decision.counts.current_iteration}/${f.decision.counts.max_iterations}
- 当前Token消耗: unknown
- 错误计数: ${count}/${f.threshold}

### 影响范围
- 影响文件: ${f.files.length > 0 ? f.files.join(", ") : "(未知)"}
- 影响技能: ${f.skill}

### 失败原因分析
Classified as ${f.type} by the rule "${f.rule}". ${f.decision.strategyReason}.${
    f.decision.rollback ? ` Rollback needed: ${f.decision.rollbackReason}.` : ""
  }
`;
}

/** `.circuit-breaker-task-<ID>`, with the specification's front matter and body. */
export function breakerFile(f: HandledFailure): string {
  const count = Math.max(f.decision.skillCount, f.decision.taskCount);
  return `---
triggered_at: ${f.ts}
trigger_type: TASK_LEVEL
task_id: ${f.task}
skill_name: ${f.skill}
error_count: ${count}
max_retries: ${f.threshold}
---

# 任务级熔断触发

## 触发原因
同一任务失败次数达到阈值：${count}/${f.threshold}

## 建议
1. 检查错误日志：.trace/ERROR_TRACE.md
2. 分析失败原因
3. 优先执行自动诊断、自动回滚或自动拆分方案

## 后续行动
- 默认触发 harness-handle-failure / harness-diagnose-and-improve
- 仅在真实阻塞时升级，不等待普通任务级人工决策
`;
}

/** The next steps the specification's Step 10 names for a decision. */
export function nextSteps(f: Pick<HandledFailure, "type" | "decision">): string[] {
  const d = f.decision;
  if (d.taskBreaker || d.globalBreaker) {
    return [
      "Stop this task: its circuit breaker is open.",
      d.escalate
        ? "This is a true blocker: trigger harness-escalate-to-human with the report."
        : "Run harness-diagnose-and-improve before any retry.",
      "Read .trace/ERROR_TRACE.md for every failure of this task.",
    ];
  }
  if (f.type === "architecture") {
    return [
      "Do not retry: trigger harness-enforce-architecture-guardrails.",
      "Fix the layering or dependency problem on top of the stable commit.",
      "Then run the task again from the start.",
    ];
  }
  if (d.strategy === "A") {
    return [
      "Trigger harness-diagnose-and-improve for the code error.",
      "Apply the fix and retry the skill (strategy A, at most 2 retries).",
      "On success run: lifeline fail handle --success --task … --skill …",
    ];
  }
  if (d.strategy === "B") {
    return [
      "Adjust: refresh dependencies, reorder steps, or wait for the resource.",
      "Retry the skill once (strategy B).",
      "On success run: lifeline fail handle --success --task … --skill …",
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

/** `.trace/FAILURE_REPORT_<ID>.md`, following the specification's template. */
export function failureReport(f: HandledFailure): string {
  const d = f.decision;
  const count = Math.max(d.skillCount, d.taskCount);
  const rolled = f.rollback && "to" in f.rollback ? f.rollback : null;
  const steps = nextSteps(f);
  return `---
generated_at: ${f.ts}
task_id: ${f.task}
status: FAILED
---

# 失败处理报告

## 执行摘要
- 失败时间: ${f.ts}
- 任务ID: ${f.task}
- 失败技能: ${f.skill}
- 错误类型: ${TYPE_NAMES[f.type]}

## 错误详情
${f.detail}

## 处理措施
- [x] 错误分类完成
- [x] 失败上下文已记录
- [x] 错误计数已更新: ${count}/${f.threshold}
- [x] 回滚决策: ${rolled ? "是" : d.rollback ? "需要, 但被拒绝" : "否"}
- [x] 重试决策: 策略${d.strategy}

## 回滚信息
- 是否回滚: ${rolled ? "是" : "否"}
- 回滚到: ${
    rolled
      ? rolled.to
      : f.rollback && "refused" in f.rollback
      ? `(拒绝: ${f.rollback.refused})`
      : "-"
  }
- 暂存备份: ${rolled ? `${rolled.backup} (restore: ${rolled.restore})` : "-"}

## 重试信息
- 重试策略: ${d.strategy === "C" ? "C (不重试)" : d.strategy}
- 重试次数: ${count}
- 重试结果: ${d.strategy === "C" ? "失败" : "进行中"}

## 熔断状态
- 任务级熔断: ${d.taskBreaker ? "触发" : "未触发"}
- 全局熔断: ${d.globalBreaker ? "触发" : "未触发"}
- 错误计数: ${count}/${f.threshold}

## 下一步建议
${steps.map((s, i) => `${i + 1}. ${s}`).join("\n")}
`;
}

/** Creates the harness files that are missing. Returns what it created and what it kept. */
export async function initHarness(
  root: string,
  maxIterations: number,
): Promise<{ created: string[]; kept: string[] }> {
  const p = harnessPaths(root);
  await ensureDir(p.dir, { root });
  await ensureDir(p.trace, { root });
  const files: [string, () => string][] = [
    [p.contract, () => "# Execution Contract\n\nhuman_escalation_policy: true_blockers_only\n"],
    [
      p.skillRegistry,
      () =>
        "# Skill Registry\n\n- [x] harness-init - 初始化 ✅\n" +
        `- [x] ${BREAKER_SKILL} - 熔断机制 ✅\n- [ ] ${THIS_SKILL} - 失败处理技能\n`,
    ],
    [p.eventLog, () => "# Event Log\n\n"],
    [p.errorTrace, () => "# Error Trace\n"],
    [p.iterationCounter, () => renderIterationCounter(emptyHarnessState(maxIterations))],
    [p.globalState, () => renderGlobalState("", emptyHarnessState(maxIterations), 3)],
    [p.state, () => harnessStateCodec.format(emptyHarnessState(maxIterations))],
  ];
  const created: string[] = [];
  const kept: string[] = [];
  for (const [path, content] of files) {
    if (stateFileExists(path, { root })) {
      kept.push(path);
    } else {
      await writeFileAtomic(path, content(), { root });
      created.push(path);
    }
  }
  return { created, kept };
}

/**
 * The state for a harness that has markdown but no JSON yet (made by other tools): its iteration
 * counter's `key: value` lines are imported once. Counts start at zero.
 */
export function importState(iterationCounter: string, defaultMax: number): HarnessState {
  const value = (key: string) => {
    const match = new RegExp(`^\\s*${key}:\\s*(\\d+)`, "m").exec(iterationCounter);
    return match ? Number(match[1]) : undefined;
  };
  return {
    ...emptyHarnessState(value("max_iterations") ?? defaultMax),
    current_iteration: value("current_iteration") ?? 0,
  };
}
