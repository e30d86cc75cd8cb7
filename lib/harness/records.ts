/**
 * The harness's markdown, in the specification's formats: `## 失败记录 #N` for ERROR_TRACE.md,
 * `.circuit-breaker-task-<ID>`, FAILURE_REPORT_<ID>.md, GLOBAL_STATE.md's sections and the lines of
 * EVENT_LOG.md. `harness.language` "zh" keeps the specification's headings; "en" has the same
 * structure with English headings, for readers who do not read Chinese.
 *
 * @module
 */

import type { HarnessCounts, HarnessEvent } from "./breaker_policy.ts";
import type { ErrorType } from "./classify_policy.ts";
import type { HandledOutcome, RollbackOutcome } from "./outcome.ts";
import { rollbackReasonText, strategyReasonText } from "./wording.ts";

/** The languages of the harness files. */
export type Language = "zh" | "en";

const ZH = {
  record: "失败记录",
  basic: "基本信息",
  time: "时间",
  taskId: "任务ID",
  skill: "技能",
  errorType: "错误类型",
  detail: "错误详情",
  context: "上下文",
  iteration: "当前迭代",
  tokens: "当前Token消耗",
  count: "错误计数",
  impact: "影响范围",
  files: "影响文件",
  skills: "影响技能",
  analysis: "失败原因分析",
  unknown: "(未知)",
  report: "失败处理报告",
  summary: "执行摘要",
  failedAt: "失败时间",
  failedSkill: "失败技能",
  measures: "处理措施",
  classified: "错误分类完成",
  recorded: "失败上下文已记录",
  counted: "错误计数已更新",
  rollbackDecision: "回滚决策",
  retryDecision: "重试决策",
  rollbackInfo: "回滚信息",
  rolledBack: "是否回滚",
  rolledTo: "回滚到",
  backup: "暂存备份",
  retryInfo: "重试信息",
  retryStrategy: "重试策略",
  retries: "重试次数",
  retryResult: "重试结果",
  breakers: "熔断状态",
  taskBreaker: "任务级熔断",
  globalBreaker: "全局熔断",
  next: "下一步建议",
  yes: "是",
  no: "否",
  triggered: "触发",
  notTriggered: "未触发",
  strategy: "策略",
  noRetry: "不重试",
  failed: "失败",
  running: "进行中",
  refused: "拒绝",
  neededRefused: "需要, 但被拒绝",
  neededSkipped: "需要, 但 --no-rollback",
  breakerTitle: "任务级熔断触发",
  trigger: "触发原因",
  triggerText: "同一任务失败次数达到阈值",
  advice: "建议",
  advice1: "检查错误日志：.trace/ERROR_TRACE.md",
  advice2: "分析失败原因",
  advice3: "优先执行自动诊断、自动回滚或自动拆分方案",
  followUp: "后续行动",
  follow1: "默认触发 harness-handle-failure / harness-diagnose-and-improve",
  follow2: "仅在真实阻塞时升级，不等待普通任务级人工决策",
  skillCounts: "技能错误计数",
  recentEvents: "最近事件",
  none: "(无)",
  headNotMoved: "HEAD 未移动",
  types: {
    code: "代码错误 (code)",
    architecture: "架构错误 (architecture)",
    process: "流程错误 (process)",
  },
};

const EN: typeof ZH = {
  record: "Failure record",
  basic: "Basic information",
  time: "Time",
  taskId: "Task ID",
  skill: "Skill",
  errorType: "Error type",
  detail: "Error details",
  context: "Context",
  iteration: "Current iteration",
  tokens: "Current token use",
  count: "Error count",
  impact: "Impact",
  files: "Files",
  skills: "Skills",
  analysis: "Failure analysis",
  unknown: "(unknown)",
  report: "Failure handling report",
  summary: "Summary",
  failedAt: "Failed at",
  failedSkill: "Failed skill",
  measures: "Measures",
  classified: "error classified",
  recorded: "failure context recorded",
  counted: "error count updated",
  rollbackDecision: "rollback decision",
  retryDecision: "retry decision",
  rollbackInfo: "Rollback",
  rolledBack: "Rolled back",
  rolledTo: "Rolled back to",
  backup: "Backup",
  retryInfo: "Retry",
  retryStrategy: "Strategy",
  retries: "Retries",
  retryResult: "Result",
  breakers: "Circuit breakers",
  taskBreaker: "Task breaker",
  globalBreaker: "Global breaker",
  next: "Next steps",
  yes: "yes",
  no: "no",
  triggered: "triggered",
  notTriggered: "not triggered",
  strategy: "strategy ",
  noRetry: "no retry",
  failed: "failed",
  running: "in progress",
  refused: "refused",
  neededRefused: "needed, but refused",
  neededSkipped: "needed, but --no-rollback",
  breakerTitle: "Task circuit breaker triggered",
  trigger: "Trigger",
  triggerText: "the task's failures reached the threshold",
  advice: "Advice",
  advice1: "Read the error log: .trace/ERROR_TRACE.md",
  advice2: "Analyse the cause",
  advice3: "Prefer automatic diagnosis, rollback or splitting the task",
  followUp: "Follow-up",
  follow1: "By default run harness-handle-failure / harness-diagnose-and-improve",
  follow2: "Escalate only true blockers; do not wait for a person on ordinary task failures",
  skillCounts: "Skill error counts",
  recentEvents: "Recent events",
  none: "(none)",
  headNotMoved: "HEAD did not move",
  types: { code: "code error", architecture: "architecture error", process: "process error" },
};

/** The labels of a language. */
export function labels(lang: Language): typeof ZH {
  return lang === "en" ? EN : ZH;
}

/** An error type as the records name it. */
export function typeName(type: ErrorType, lang: Language): string {
  return labels(lang).types[type];
}

const SKILL = "harness-handle-failure";

/** One line of EVENT_LOG.md: `{TIMESTAMP} | {KIND} | {skill} | {detail} | {status}`. */
export function eventLine(event: HarnessEvent | EngineEvent, lang: Language): string {
  if (event.kind === "failure") {
    return `${event.ts} | FAILURE | ${event.skill} | ${event.task} - ${event.detail} | FAILURE`;
  }
  const [kind, detail, status] = eventParts(event, lang === "en");
  return `${event.ts} | ${kind} | ${SKILL} | ${detail} | ${status}`;
}

/** The kind, the detail (in the language) and the status of an event line. */
function eventParts(
  e: Exclude<HarnessEvent | EngineEvent, { kind: "failure" }>,
  en: boolean,
): [string, string, string] {
  switch (e.kind) {
    case "breaker_open_unhandled":
      return [
        "CIRCUIT_BREAKER_OPEN",
        en
          ? `the breaker of task ${e.task} is open; not handled`
          : `任务 ${e.task} 的熔断已打开, 未处理`,
        "BLOCKED",
      ];
    case "breaker_triggered": {
      const n = `${e.count}/${e.threshold}`;
      const detail = en
        ? `task breaker (task: ${e.task}, errors: ${n})`
        : `任务级熔断 (任务: ${e.task}, 错误: ${n})`;
      return ["CIRCUIT_BREAKER_TRIGGERED", detail, "CRITICAL"];
    }
    case "retry":
      return [
        "RETRY",
        en ? `retry ${e.skill} (attempt ${e.count})` : `重试 ${e.skill} (第${e.count}次)`,
        "STARTING",
      ];
    case "retry_succeeded":
      return [
        "RETRY",
        en ? `${e.task} retry succeeded, counts cleared` : `${e.task} 重试成功, 计数已清除`,
        "SUCCESS",
      ];
    case "reset":
      return ["RESET", resetText(e, en), "SUCCESS"];
    case "rollback_done": {
      const where = e.scope ? ` (${e.scope}/)` : "";
      return [
        "ROLLBACK",
        `${en ? "rolled back to" : "回滚到"} ${e.commit.slice(0, 12)}${where}`,
        "SUCCESS",
      ];
    }
    case "rollback_not_done":
      return ["ROLLBACK", `${en ? "rollback refused" : "回滚被拒绝"}: ${e.message}`, "FAILURE"];
    case "restore":
      return ["RESTORE", `${en ? "restored" : "恢复"} ${e.ref}`, "SUCCESS"];
  }
}

function resetText(event: Extract<HarnessEvent, { kind: "reset" }>, en: boolean): string {
  const parts = [
    ...(event.task
      ? [
        en
          ? `task ${event.task}: count cleared, breaker closed`
          : `任务 ${event.task}: 计数已清除, 熔断已关闭`,
      ]
      : []),
    ...(event.global ? [en ? "global iteration budget reset" : "全局迭代计数已重置"] : []),
  ];
  return parts.join("; ");
}

/** Events the engine and the commands log themselves, with the results of git operations. */
export type EngineEvent =
  | { kind: "rollback_done"; ts: string; commit: string; scope: string }
  | { kind: "rollback_not_done"; ts: string; message: string }
  | { kind: "restore"; ts: string; ref: string };

/** ITERATION_COUNTER.md, rendered from the state. */
export function renderIterationCounter(state: HarnessCounts): string {
  return `# Iteration Counter\n\ncurrent_iteration: ${state.current_iteration}\nmax_iterations: ${state.max_iterations}\n`;
}

/**
 * GLOBAL_STATE.md with its skill-count and recent-event sections rendered from the state; every
 * other section of the file is kept as it is.
 */
export function renderGlobalState(
  existing: string,
  state: HarnessCounts,
  { threshold, lang }: { threshold: number; lang: Language },
): string {
  const l = labels(lang);
  const counts = Object.entries(state.skills).sort(([a], [b]) => a.localeCompare(b));
  const sections: Record<string, string> = {
    [l.skillCounts]: counts.length === 0
      ? l.none
      : counts.map(([skill, n]) => `- ${skill}: ${n}/${threshold}`).join("\n"),
    [l.recentEvents]: state.recent_events.length === 0
      ? l.none
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

/** `## 失败记录 #N` for ERROR_TRACE.md, with the specification's fields. */
export function traceRecord(o: HandledOutcome, lang: Language): string {
  const l = labels(lang);
  const d = o.decision;
  const rollback = d.rollback ? ` Rollback needed: ${rollbackReasonText(d.rollback)}.` : "";
  return `
## ${l.record} #${d.record}

### ${l.basic}
- ${l.time}: ${o.ts}
- ${l.taskId}: ${o.task}
- ${l.skill}: ${o.skill}
- ${l.errorType}: ${typeName(o.type, lang)}

### ${l.detail}
${o.detail}

### ${l.context}
- ${l.iteration}: ${o.iteration.current}/${o.iteration.max}
- ${l.tokens}: unknown
- ${l.count}: ${d.count}/${d.threshold}

### ${l.impact}
- ${l.files}: ${o.files.length > 0 ? o.files.join(", ") : l.unknown}
- ${l.skills}: ${o.skill}

### ${l.analysis}
Classified as ${o.type} by the rule "${o.rule}". ${strategyReasonText(d.strategyReason)}.${rollback}
`;
}

/** `.circuit-breaker-task-<ID>`, with the specification's front matter and body. */
export function breakerFile(o: HandledOutcome, lang: Language): string {
  const l = labels(lang);
  const d = o.decision;
  return `---
triggered_at: ${o.ts}
trigger_type: TASK_LEVEL
task_id: ${o.task}
skill_name: ${o.skill}
error_count: ${d.count}
max_retries: ${d.threshold}
---

# ${l.breakerTitle}

## ${l.trigger}
${l.triggerText}：${d.count}/${d.threshold}

## ${l.advice}
1. ${l.advice1}
2. ${l.advice2}
3. ${l.advice3}

## ${l.followUp}
- ${l.follow1}
- ${l.follow2}
`;
}

function rollbackLines(r: RollbackOutcome, lang: Language): [string, string, string, string] {
  const l = labels(lang);
  switch (r.status) {
    case "done": {
      const { done } = r;
      const where = done.headMoved ? "" : ` (${done.scope}/; ${l.headNotMoved})`;
      return [
        l.yes,
        l.yes,
        `${done.stable.commit.slice(0, 12)} (${done.stable.name})${where}`,
        `${done.backup} (restore: lifeline fail restore ${done.backup})`,
      ];
    }
    case "refused":
    case "failed":
      return [
        l.neededRefused,
        l.no,
        `(${l.refused}: ${r.message})`,
        "backup" in r && r.backup ? r.backup : "-",
      ];
    case "skipped":
      return [l.neededSkipped, l.no, "-", "-"];
    default:
      return [l.no, l.no, "-", "-"];
  }
}

/** `.trace/FAILURE_REPORT_<ID>.md`, following the specification's template. */
export function failureReport(o: HandledOutcome, lang: Language): string {
  const l = labels(lang);
  const d = o.decision;
  const [decision, rolled, to, backup] = rollbackLines(o.rollback, lang);
  return `---
generated_at: ${o.ts}
task_id: ${o.task}
status: FAILED
---

# ${l.report}

## ${l.summary}
- ${l.failedAt}: ${o.ts}
- ${l.taskId}: ${o.task}
- ${l.failedSkill}: ${o.skill}
- ${l.errorType}: ${typeName(o.type, lang)}

## ${l.detail}
${o.detail}

## ${l.measures}
- [x] ${l.classified}
- [x] ${l.recorded}
- [x] ${l.counted}: ${d.count}/${d.threshold}
- [x] ${l.rollbackDecision}: ${decision}
- [x] ${l.retryDecision}: ${l.strategy}${d.strategy}

## ${l.rollbackInfo}
- ${l.rolledBack}: ${rolled}
- ${l.rolledTo}: ${to}
- ${l.backup}: ${backup}

## ${l.retryInfo}
- ${l.retryStrategy}: ${d.strategy === "C" ? `C (${l.noRetry})` : d.strategy}
- ${l.retries}: ${d.count}
- ${l.retryResult}: ${d.strategy === "C" ? l.failed : l.running}

## ${l.breakers}
- ${l.taskBreaker}: ${d.taskBreaker ? l.triggered : l.notTriggered}
- ${l.globalBreaker}: ${d.globalBreaker ? l.triggered : l.notTriggered}
- ${l.count}: ${d.count}/${d.threshold}

## ${l.next}
${o.nextSteps.map((s, i) => `${i + 1}. ${s}`).join("\n")}
`;
}
