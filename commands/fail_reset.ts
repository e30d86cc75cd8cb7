/**
 * `lifeline fail reset`: closes a task's breaker and clears its counts, or gives back the global
 * iteration budget.
 *
 * @module
 */

import { type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { loadConfig } from "../lib/state/config.ts";
import { nameArgument } from "../lib/state/layout.ts";
import { resetHarness } from "../lib/harness/engine.ts";

export const help = `Usage: lifeline fail reset (--task ID | --global) [--root DIR] [--json]

--task ID clears the task's failure count, and the count of the skill its breaker names, and
closes its breaker (.EnjoyHarness/.circuit-breaker-task-<ID>). --global sets current_iteration
in ITERATION_COUNTER.md back to 0: at max_iterations (100) every task's failures are answered
"global breaker open" (exit 10) until then. Unlike \`fail handle --success\`, nothing is marked
stable. The event log records the reset.

Options:
  --task ID    the task to reset
  --global     reset the global iteration budget
  --root DIR   the project (default: the nearest .claude/ or git top level at or above .)
  --json       print the result as one JSON object
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, {
    task: { type: "string" },
    global: { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.task === undefined && !values.global) {
    throw new UsageError("give --task ID or --global");
  }
  const task = values.task === undefined ? null : nameArgument("task id", values.task);
  const found = await projectRoot(values.root, ctx, { harness: true });
  const root = found.root;
  const config = await loadConfig(ctx.env, root);
  const result = await resetHarness(
    { root, config, now: ctx.now(), pid: ctx.pid, rootFlag: values.root ?? null },
    { task, global: values.global === true },
  );
  if (values.json) {
    ctx.out.json({
      root,
      task: result.task,
      global: result.global,
      breaker_closed: result.breakerClosed,
      skill_cleared: result.skillCleared,
      iteration: result.iteration,
    });
    return EXIT.ok;
  }
  for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line);
  if (result.task !== null) {
    ctx.out.line(
      `reset ${result.task}: count cleared${
        result.skillCleared ? ` (and ${result.skillCleared}'s)` : ""
      }, ${result.breakerClosed ? "breaker closed" : "no breaker was open"}`,
    );
  }
  if (result.global) {
    ctx.out.line(
      `reset the global iteration budget: ${result.iteration.before}/${result.iteration.max} → ${result.iteration.after}/${result.iteration.max}`,
    );
  }
  return EXIT.ok;
}
