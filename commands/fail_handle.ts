/**
 * `lifeline fail handle`: the failure handler for autonomous loops (spec/handle-failure.md):
 * classify, record, count, roll back safely, decide the retry strategy, open the circuit breaker,
 * report. Loop scripts read its exit code: 0 retry, 10 stop and escalate, 1 error, 64 usage.
 *
 * @module
 */

import { CliError, type Context, existingRoot, EXIT, UsageError } from "../lib/core/cli.ts";
import { relativeTo } from "../lib/core/path.ts";
import { type Config, loadConfig } from "../lib/state/config.ts";
import { parseFlags } from "../lib/core/flags.ts";
import {
  breakerFile,
  circuitBreakerEnabled,
  escalationPolicy,
  eventLine,
  failureReport,
  type HandledFailure,
  type HarnessState,
  harnessStateCodec,
  importState,
  isoSeconds,
  markSkillDone,
  nextSteps,
  renderGlobalState,
  renderIterationCounter,
  requiredFiles,
  traceRecord,
} from "../lib/harness/files.ts";
import { harnessPaths, InvalidNameError, validateName } from "../lib/state/layout.ts";
import { classifyError, type ErrorType } from "../lib/harness/classify_policy.ts";
import { afterSuccess, decideFailure } from "../lib/harness/breaker_policy.ts";
import { markStable, recoverOwnState, RefusedError, rollBack } from "../lib/harness/rollback.ts";
import {
  appendText,
  readState,
  readStateText,
  removeFile,
  stateFileExists,
  withLock,
  writeFileAtomic,
  writeNewFile,
} from "../lib/state/store.ts";

export const help =
  `Usage: lifeline fail handle --task ID --skill NAME --error TEXT [--type code|architecture|process]
                           [--files a,b] [--unstable] [--root DIR] [--json]
       lifeline fail handle --event "<ISO> | FAILURE | <skill> | <task> - <detail> | FAILURE"
       lifeline fail handle --success --task ID --skill NAME
       (or the fields as JSON on stdin: {"task", "skill", "error", "type", "files"})

Handles one failure of an autonomous loop, as spec/handle-failure.md describes:

  1. checks the harness (\`lifeline fail init\`) and that the circuit breaker is enabled
  2. classifies the error as code, architecture or process, and names the rule that matched
  3. appends "## 失败记录 #N" to .trace/ERROR_TRACE.md
  4. counts failures per skill and per task (GLOBAL_STATE.md: "- <skill>: N/3")
  5. rolls back on an architecture error, a skill's second failure, or --unstable: saves the
     whole working tree under refs/lifeline/backups/<task>-<time> first, then resets to
     refs/lifeline/stable (or the newest tag matching "stable*"); never runs git clean
  6. decides: A fix and retry (code, count < 3), B adjust and retry once (process),
     C no retry (architecture, count >= 3, repeated failure)
  7. opens the task's circuit breaker at 3 failures (.EnjoyHarness/.circuit-breaker-task-<ID>)
  8. writes .trace/FAILURE_REPORT_<ID>.md, adds 10 to ITERATION_COUNTER.md

While a task's breaker is open, its failures are answered "breaker open" at once.
--success clears the task's and the skill's counts, closes the breaker and marks HEAD stable.

Exit codes: 0 retry (strategy A or B, or a success recorded), 10 stop and escalate (strategy C
or an open breaker), 1 error, 64 usage.

Options:
  --task ID, --skill NAME, --error TEXT   the failure
  --type T        override the classification
  --files a,b     files the failure touched
  --unstable      the change left the system unstable: roll back whatever the count
  --event LINE    the failure as an event line
  --success       record that a retry succeeded
  --root DIR      the project (default: .)
  --json          print the decision as one JSON object
  -h, --help`;

const TYPES = ["code", "architecture", "process"] as const;

/** A parsed invocation. */
export type HandleArgs =
  & { root?: string; json: boolean }
  & (
    | { kind: "success"; task: string; skill: string }
    | {
      kind: "failure";
      task: string;
      skill: string;
      error: string;
      type?: ErrorType;
      files: string[];
      unstable: boolean;
    }
  );

/** Parses an event line `<ISO> | FAILURE | <skill> | <task> - <detail> | FAILURE`. */
export function parseEventLine(line: string): { skill: string; task: string; error: string } {
  const parts = line.split("|").map((p) => p.trim());
  if (parts.length !== 5 || parts[1] !== "FAILURE" || Number.isNaN(Date.parse(parts[0]!))) {
    throw new UsageError(
      `not a failure event: expected "<ISO time> | FAILURE | <skill> | <task> - <detail> | FAILURE"`,
    );
  }
  const cut = parts[3]!.indexOf(" - ");
  if (cut < 0) throw new UsageError(`the event's fourth field must be "<task> - <detail>"`);
  return {
    skill: parts[2]!,
    task: parts[3]!.slice(0, cut).trim(),
    error: parts[3]!.slice(cut + 3).trim(),
  };
}

function checkedName(kind: "task id" | "skill name", value: unknown): string {
  try {
    return validateName(kind, value);
  } catch (error) {
    if (error instanceof InvalidNameError) throw new UsageError(error.message);
    throw error;
  }
}

/** Parses `fail handle` arguments (and the stdin JSON, when given). Throws UsageError. */
export function parse(args: readonly string[], stdinJson?: unknown): HandleArgs {
  const { values } = parseFlags(args, {
    task: { type: "string" },
    skill: { type: "string" },
    error: { type: "string" },
    type: { type: "string" },
    files: { type: "string" },
    unstable: { type: "boolean" },
    event: { type: "string" },
    success: { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  });
  const common = { json: values.json === true, ...(values.root ? { root: values.root } : {}) };
  let fields: Record<string, unknown> = { ...values };
  if (values.event !== undefined) fields = { ...fields, ...parseEventLine(values.event) };
  else if (values.task === undefined && stdinJson !== undefined) {
    if (!stdinJson || typeof stdinJson !== "object" || Array.isArray(stdinJson)) {
      throw new UsageError("stdin must be a JSON object with task, skill and error");
    }
    fields = { ...stdinJson as Record<string, unknown>, ...fields };
  }
  if (fields.task === undefined) {
    throw new UsageError("missing --task (or --event, or JSON on stdin)");
  }
  if (fields.skill === undefined) throw new UsageError("missing --skill");
  const task = checkedName("task id", fields.task);
  const skill = checkedName("skill name", fields.skill);
  if (values.success) return { kind: "success", task, skill, ...common };
  if (typeof fields.error !== "string" || fields.error.trim() === "") {
    throw new UsageError("missing --error");
  }
  const type = fields.type;
  if (type !== undefined && !TYPES.includes(type as ErrorType)) {
    throw new UsageError(`--type must be code, architecture or process, got "${type}"`);
  }
  const files = Array.isArray(fields.files)
    ? fields.files.map(String)
    : typeof fields.files === "string"
    ? fields.files.split(",").map((f) => f.trim()).filter(Boolean)
    : [];
  return {
    kind: "failure",
    task,
    skill,
    error: fields.error,
    ...(type ? { type: type as ErrorType } : {}),
    files,
    unstable: values.unstable === true || fields.unstable === true,
    ...common,
  };
}

async function readStdinJson(ctx: Context): Promise<unknown> {
  if (ctx.stdin.isTerminal()) return undefined;
  const { readStdinText } = await import("../lib/claude/hook_io.ts");
  const text = (await readStdinText(ctx.stdin, { timeoutMs: 2000 }).catch(() => "")).trim();
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError("stdin is not JSON");
  }
}

function checkPreconditions(root: string): void {
  for (const path of requiredFiles(root)) {
    if (!stateFileExists(path, { root })) {
      throw new CliError(
        `the harness is not set up: ${relativeTo(root, path)} is missing`,
        "run `lifeline fail init` first",
      );
    }
  }
}

async function checkBreakerEnabled(root: string): Promise<void> {
  const registry = await readStateText(harnessPaths(root).skillRegistry, { root });
  if (!circuitBreakerEnabled(registry)) {
    throw new CliError(
      "the circuit breaker is not enabled (熔断机制未启用): .EnjoyHarness/SKILL_REGISTRY.md does not " +
        "mark harness-enable-circuit-breaker done",
      "run `lifeline fail init`, or mark it: - [x] harness-enable-circuit-breaker",
    );
  }
}

async function appendLines(root: string, path: string, lines: string[]): Promise<void> {
  if (lines.length > 0) await appendText(path, lines.join("\n") + "\n", { root });
}

async function loadState(root: string, config: Config): Promise<HarnessState> {
  const p = harnessPaths(root);
  const result = await readState(p.state, harnessStateCodec, { root });
  if (result.kind === "ok") return result.value;
  if (result.kind === "corrupt") {
    throw new CliError(
      `${p.state} is not valid (${result.reason})`,
      "fix it, or move it aside to rebuild it from the markdown",
    );
  }
  return importState(
    await readStateText(p.iterationCounter, { root }),
    config.breaker.maxIterations,
  );
}

async function saveState(root: string, state: HarnessState, threshold: number): Promise<void> {
  const p = harnessPaths(root);
  await writeFileAtomic(p.state, harnessStateCodec.format(state), { root });
  await writeFileAtomic(p.iterationCounter, renderIterationCounter(state), { root });
  const global = await readStateText(p.globalState, { root }).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return "";
    throw error;
  });
  await writeFileAtomic(p.globalState, renderGlobalState(global, state, threshold), { root });
  const registry = await readStateText(p.skillRegistry, { root });
  await writeFileAtomic(p.skillRegistry, markSkillDone(registry), { root });
}

function withEvent(state: HarnessState, event: string): HarnessState {
  return { ...state, recent_events: [...state.recent_events, event].slice(-10) };
}

/** The decision, as --json prints it. */
interface Outcome {
  [key: string]: unknown;
  exit_code: number;
}

async function handleSuccess(
  ctx: Context,
  root: string,
  a: { task: string; skill: string },
  config: Config,
): Promise<Outcome> {
  const p = harnessPaths(root);
  const ts = isoSeconds(ctx.now());
  const state = await loadState(root, config);
  const cleared = withEvent(
    afterSuccess(state, a.task, a.skill),
    `${ts} | harness-handle-failure | RETRY_SUCCEEDED | ${a.task} | SUCCESS`,
  );
  const hadBreaker = stateFileExists(p.breaker(a.task), { root });
  if (hadBreaker) await removeFile(p.breaker(a.task), { root });
  const stable = await markStable(root);
  await saveState(root, cleared, config.breaker.threshold);
  await appendLines(root, p.eventLog, [
    eventLine(ts, "RETRY", `${a.task} 重试成功, 计数已清除`, "SUCCESS"),
  ]);
  return {
    task: a.task,
    skill: a.skill,
    success: true,
    counts_cleared: true,
    breaker_closed: hadBreaker,
    stable: stable ?? null,
    next_step: "continue with the next task",
    exit_code: EXIT.ok,
  };
}

async function handleFailure(
  ctx: Context,
  root: string,
  a: Extract<HandleArgs, { kind: "failure" }>,
  config: Config,
): Promise<Outcome> {
  const p = harnessPaths(root);
  const ts = isoSeconds(ctx.now());
  const threshold = config.breaker.threshold;
  if (stateFileExists(p.breaker(a.task), { root })) {
    await appendLines(root, p.eventLog, [
      `${ts} | FAILURE | ${a.skill} | ${a.task} - ${a.error.split("\n")[0]} | FAILURE`,
      eventLine(ts, "CIRCUIT_BREAKER_OPEN", `任务 ${a.task} 的熔断已打开, 未处理`, "BLOCKED"),
    ]);
    return {
      task: a.task,
      skill: a.skill,
      breaker: "open",
      strategy: "C",
      escalate: true,
      next_step: `breaker open: ${
        relativeTo(root, p.breaker(a.task))
      }; fix the cause, then \`lifeline fail handle --success\``,
      exit_code: EXIT.escalate,
    };
  }
  const state = await loadState(root, config);
  if (state.current_iteration >= state.max_iterations) {
    return {
      task: a.task,
      skill: a.skill,
      breaker: "global",
      strategy: "C",
      escalate: true,
      next_step:
        `global breaker open: ${state.current_iteration}/${state.max_iterations} iterations used`,
      exit_code: EXIT.escalate,
    };
  }
  const classified = classifyError(a.error, a.type);
  const contract = await readStateText(p.contract, { root });
  const decision = decideFailure(state, {
    task: a.task,
    skill: a.skill,
    type: classified.type,
    unstable: a.unstable,
  }, {
    threshold,
    rollbackAtCount: config.breaker.rollbackAtCount,
    iterationsPerHandling: 10,
    escalationPolicy: escalationPolicy(contract),
  });

  const events = [`${ts} | FAILURE | ${a.skill} | ${a.task} - ${a.error.split("\n")[0]} | FAILURE`];
  let rollback: HandledFailure["rollback"] = null;
  if (decision.rollback) {
    try {
      const done = await rollBack(root, {
        task: a.task,
        now: ctx.now(),
        tagPattern: config.breaker.stableTagPattern,
      });
      rollback = {
        to: `${done.stable.commit.slice(0, 12)} (${done.stable.name})`,
        backup: done.backup.ref,
        restore: done.restoreCommand,
      };
      events.push(
        eventLine(ts, "ROLLBACK", `回滚到 ${done.stable.commit.slice(0, 12)}`, "SUCCESS"),
      );
    } catch (error) {
      if (!(error instanceof RefusedError)) throw error;
      rollback = { refused: error.message + (error.hint ? ` (${error.hint})` : "") };
      events.push(eventLine(ts, "ROLLBACK", `回滚被拒绝: ${error.message}`, "FAILURE"));
    }
  }
  const failure: HandledFailure = {
    ts,
    task: a.task,
    skill: a.skill,
    type: classified.type,
    rule: classified.rule,
    detail: a.error,
    files: a.files,
    decision,
    threshold,
    rollback,
  };
  const count = Math.max(decision.skillCount, decision.taskCount);
  if (decision.taskBreaker) {
    await writeNewFile(p.breaker(a.task), breakerFile(failure), { root }).catch((error) => {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    });
    events.push(
      eventLine(
        ts,
        "CIRCUIT_BREAKER_TRIGGERED",
        `任务级熔断 (任务: ${a.task}, 错误: ${count}/${threshold})`,
        "CRITICAL",
      ),
    );
  } else if (decision.strategy !== "C") {
    events.push(eventLine(ts, "RETRY", `重试 ${a.skill} (第${count}次)`, "STARTING"));
  }
  await appendText(p.errorTrace, traceRecord(failure), { root });
  await writeFileAtomic(p.report(a.task), failureReport(failure), { root });
  await appendLines(root, p.eventLog, events);
  await saveState(
    root,
    withEvent(
      decision.counts as HarnessState,
      `${ts} | harness-handle-failure | FAILURE_HANDLED | ${a.task} | FAILURE`,
    ),
    threshold,
  );
  return {
    task: a.task,
    skill: a.skill,
    type: classified.type,
    rule: classified.rule,
    count: { skill: decision.skillCount, task: decision.taskCount, max: threshold },
    rollback: rollback === null
      ? { needed: false }
      : "to" in rollback
      ? { needed: true, done: true, reason: decision.rollbackReason, ...rollback }
      : { needed: true, done: false, reason: decision.rollbackReason, refused: rollback.refused },
    strategy: decision.strategy,
    strategy_reason: decision.strategyReason,
    breaker: decision.taskBreaker ? "opened" : decision.globalBreaker ? "global" : "closed",
    escalate: decision.escalate,
    iteration: { current: decision.counts.current_iteration, max: decision.counts.max_iterations },
    report: relativeTo(root, p.report(a.task)),
    next_step: nextSteps(failure)[0],
    exit_code: decision.strategy === "C" || decision.taskBreaker || decision.globalBreaker
      ? EXIT.escalate
      : EXIT.ok,
  };
}

function printSummary(ctx: Context, o: Outcome): void {
  if (o.success) {
    ctx.out.line(
      `Recorded a success for ${o.task}: counts cleared${
        o.breaker_closed ? ", breaker closed" : ""
      }` +
        (o.stable
          ? `, HEAD ${String(o.stable).slice(0, 12)} marked stable (refs/lifeline/stable)`
          : ""),
    );
    return;
  }
  if (o.breaker === "open" || (o.breaker === "global" && !o.type)) {
    ctx.out.line(`Breaker open for ${o.task}: nothing handled. ${o.next_step}`);
    return;
  }
  const count = o.count as { skill: number; task: number; max: number };
  const rollback = o.rollback as {
    needed: boolean;
    done?: boolean;
    to?: string;
    backup?: string;
    restore?: string;
    refused?: string;
  };
  ctx.out.line(`harness-handle-failure: ${o.task} (${o.skill})`);
  ctx.out.line(`  error type: ${o.type} (rule: ${o.rule})`);
  ctx.out.line(`  error count: ${Math.max(count.skill, count.task)}/${count.max}`);
  ctx.out.line(
    `  rollback: ${
      !rollback.needed
        ? "no"
        : rollback.done
        ? `yes, to ${rollback.to}; work saved as ${rollback.backup}`
        : `refused: ${rollback.refused}`
    }`,
  );
  if (rollback.restore) ctx.out.line(`  restore with: ${rollback.restore}`);
  ctx.out.line(`  retry: strategy ${o.strategy} (${o.strategy_reason})`);
  ctx.out.line(
    `  breaker: ${
      o.breaker === "opened"
        ? "opened"
        : o.breaker === "global"
        ? "global breaker open"
        : "not triggered"
    }`,
  );
  ctx.out.line(`  report: ${o.report}`);
  ctx.out.line(`  next: ${o.next_step}`);
}

export async function run(ctx: Context): Promise<number> {
  const needsStdin = !ctx.args.some((a) =>
    a === "--task" || a.startsWith("--task=") || a === "--event" || a.startsWith("--event=")
  );
  const args = parse(ctx.args, needsStdin ? await readStdinJson(ctx) : undefined);
  const root = await existingRoot(args.root, ctx.cwd);
  const config = await loadConfig(ctx.env, root);
  await recoverOwnState(root);
  checkPreconditions(root);
  await checkBreakerEnabled(root);
  // One handling at a time per harness: the counts, the breaker and git all change together.
  const outcome = await withLock(
    harnessPaths(root).state,
    () =>
      args.kind === "success"
        ? handleSuccess(ctx, root, args, config)
        : handleFailure(ctx, root, args, config),
    { root, waitMs: 120_000 },
  );
  if (args.json) ctx.out.json(outcome);
  else printSummary(ctx, outcome);
  return outcome.exit_code;
}
