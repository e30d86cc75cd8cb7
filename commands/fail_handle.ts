/**
 * `lifeline fail handle`: the failure handler for autonomous loops (spec/handle-failure.md). It
 * parses the failure, runs the engine (`lib/harness/engine.ts`) and prints its answer. Loop
 * scripts read its exit code: 0 retry, 10 stop, 1 error, 64 usage.
 *
 * @module
 */

import { type Context, UsageError } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { loadConfig } from "../lib/state/config.ts";
import { nameArgument } from "../lib/state/layout.ts";
import type { ErrorType } from "../lib/harness/classify_policy.ts";
import {
  type EngineContext,
  type FailureInput,
  handleFailure,
  handleSuccess,
} from "../lib/harness/engine.ts";
import { notifyHandling } from "../lib/harness/notice.ts";
import { insideGitCommand } from "../lib/harness/repo.ts";
import { exitCode, handleJson, handleText } from "../lib/harness/render.ts";
import { GLOSSARY, STRATEGIES } from "../lib/harness/wording.ts";

export const help =
  `Usage: lifeline fail handle --task ID --skill NAME --error TEXT [--type code|architecture|process]
                           [--files a,b] [--unstable] [--dry-run] [--no-rollback] [--root DIR] [--json]
       lifeline fail handle --event "<ISO> | FAILURE | <skill> | <task> - <detail> | FAILURE"
       lifeline fail handle --success --task ID --skill NAME
       (or the fields as JSON on stdin: {"task", "skill", "error", "type", "files"})

Handles one failure of an autonomous loop, as spec/handle-failure.md describes:

  1. checks the harness (\`lifeline fail init\`) and that the circuit breaker is enabled
  2. classifies the error as code, architecture or process, and names the rule that matched
  3. counts failures per skill and per task (GLOBAL_STATE.md: "- <skill>: N/3"), adds 10 to
     ITERATION_COUNTER.md, and opens the task's breaker at 3 (.EnjoyHarness/.circuit-breaker-task-<ID>)
  4. rolls back (an architecture error, a skill's second failure, --unstable) to this work
     tree's refs/worktree/lifeline/stable or the newest "stable*" tag on the branch, after saving all it overwrites under refs/lifeline/backups/:
     the branch moves at the repository's top, only the subtree below it. lifeline's own state
     and paths outside the root are never touched. What it cannot save (a merge in progress, a
     dirty submodule, unmerged or changed skip-worktree files, a nested repository in the way,
     a file over breaker.maxBackupFileMB) is refused, and still counted.
  5. decides the strategy, appends "## 失败记录 #N" to .trace/ERROR_TRACE.md, writes the report

Strategies:
${Object.entries(STRATEGIES).map(([s, text]) => `  ${s}  ${text}`).join("\n")}

Exit codes: 0 retry (strategy A or B, or a success recorded); 10 stop retrying this task
(strategy C, the task's breaker open, or the global iteration budget spent); 1 error; 64 usage.
With --json, "stop" is true exactly when the exit code is 10; "escalate" says whether a person
is needed (under human_escalation_policy: true_blockers_only, only for an open breaker or a
spent budget; an architecture error stops the task but is fixed without one).

An open breaker answers its task's failures at once. --success clears the task's and skill's
counts, closes the breaker, marks HEAD stable; \`lifeline fail reset\` marks nothing stable.

Terms in the next steps:
${GLOSSARY.map(([term, text]) => `  ${term}: ${text}`).join("\n")}

Options:
  --task ID, --skill NAME, --error TEXT   the failure
  --type T        override the classification
  --files a,b     files the failure touched
  --unstable      the change left the system unstable: roll back whatever the count
  --event LINE    the failure as an event line
  --success       record that a retry succeeded
  --dry-run       print the classification, the decision and what a rollback would do; change nothing
  --no-rollback   record and decide, but do not roll back
  --root DIR      the project (default: the nearest .claude/ or git top level at or above .)
  --json          print the decision as one JSON object
  -h, --help`;

const TYPES = ["code", "architecture", "process"] as const;

/** A parsed invocation. */
export type HandleArgs =
  & { root?: string; json: boolean; dryRun: boolean }
  & (
    | { kind: "success"; task: string; skill: string }
    | ({ kind: "failure" } & Omit<FailureInput, "dryRun">)
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

const FLAGS = {
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
  "dry-run": { type: "boolean" },
  "no-rollback": { type: "boolean" },
} as const;

/** The failure's fields: the flags, else the event line's, else stdin's JSON under the flags. */
function failureFields(
  values: Record<string, unknown>,
  stdinJson: unknown,
): Record<string, unknown> {
  if (typeof values.event === "string") return { ...values, ...parseEventLine(values.event) };
  if (values.task !== undefined || stdinJson === undefined) return values;
  if (!stdinJson || typeof stdinJson !== "object" || Array.isArray(stdinJson)) {
    throw new UsageError("stdin must be a JSON object with task, skill and error");
  }
  return { ...stdinJson, ...values };
}

function filesOf(files: unknown): string[] {
  if (Array.isArray(files)) return files.map(String);
  return typeof files === "string" ? files.split(",").map((f) => f.trim()).filter(Boolean) : [];
}

function errorType(type: unknown): ErrorType | undefined {
  if (type === undefined) return undefined;
  const known = TYPES.find((t) => t === type);
  if (!known) throw new UsageError(`--type must be code, architecture or process, got "${type}"`);
  return known;
}

/** Parses `fail handle` arguments (and the stdin JSON, when given). Throws UsageError. */
export function parse(args: readonly string[], stdinJson?: unknown): HandleArgs {
  const { values } = parseFlags(args, FLAGS);
  const common = {
    json: values.json === true,
    dryRun: values["dry-run"] === true,
    ...(values.root ? { root: values.root } : {}),
  };
  const fields = failureFields(values, stdinJson);
  if (fields.task === undefined) {
    throw new UsageError("missing --task (or --event, or JSON on stdin)");
  }
  if (fields.skill === undefined) throw new UsageError("missing --skill");
  const task = nameArgument("task id", fields.task);
  const skill = nameArgument("skill name", fields.skill);
  if (values.success) return { kind: "success", task, skill, ...common };
  if (typeof fields.error !== "string" || fields.error.trim() === "") {
    throw new UsageError("missing --error");
  }
  const type = errorType(fields.type);
  return {
    kind: "failure",
    task,
    skill,
    error: fields.error,
    ...(type ? { type } : {}),
    files: filesOf(fields.files),
    unstable: values.unstable === true || fields.unstable === true,
    noRollback: values["no-rollback"] === true,
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

export async function run(ctx: Context): Promise<number> {
  const needsStdin = !ctx.args.some((a) =>
    a === "--task" || a.startsWith("--task=") || a === "--event" || a.startsWith("--event=")
  );
  const args = parse(ctx.args, needsStdin ? await readStdinJson(ctx) : undefined);
  const found = await projectRoot(args.root, ctx, { harness: true });
  const root = found.root;
  const engine: EngineContext = {
    root,
    config: await loadConfig(ctx.env, root),
    now: ctx.now(),
    pid: ctx.pid,
    rootFlag: args.root ?? null,
    insideGit: insideGitCommand(ctx.env),
  };
  const outcome = args.kind === "success"
    ? await handleSuccess(engine, args)
    : await handleFailure(engine, args);
  await notifyHandling(outcome, { config: engine.config, env: ctx.env, root });
  const text = [...rootLines(found, ctx.cwd), ...handleText(outcome, engine.rootFlag)];
  if (args.json) ctx.out.json({ root, ...handleJson(outcome, engine.rootFlag) });
  else for (const line of text) ctx.out.line(line);
  return exitCode(outcome);
}
