/**
 * `lifeline fail init`: creates the loop harness of spec/handle-failure.md where it is missing.
 *
 * @module
 */

import { type Context, EXIT } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { relativeTo } from "../lib/core/path.ts";
import { loadConfig } from "../lib/state/config.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { initHarness } from "../lib/harness/files.ts";
import { recoverRepo } from "../lib/harness/rollback.ts";

export const help = `Usage: lifeline fail init [--root DIR] [--json]

Creates the harness that \`lifeline fail handle\` works on, keeping every file that exists:

  .EnjoyHarness/GLOBAL_STATE.md        skill error counts and recent events
  .EnjoyHarness/EVENT_LOG.md           one line per event
  .EnjoyHarness/ITERATION_COUNTER.md   current_iteration, max_iterations: 100
  .EnjoyHarness/SKILL_REGISTRY.md      harness-enable-circuit-breaker marked done
  .EnjoyHarness/EXECUTION_CONTRACT.md  human_escalation_policy: true_blockers_only
  .EnjoyHarness/handle-failure.json    the numbers the markdown shows (source of truth)
  .trace/ERROR_TRACE.md                one "## 失败记录 #N" per failure

Running it again changes nothing.

Options:
  --root DIR   the project (default: the nearest .claude/ or git top level at or above .)
  --json       print {"root", "created": [...], "kept": [...]}
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, { root: { type: "string" }, json: { type: "boolean" } });
  const found = await projectRoot(values.root, ctx, { harness: true });
  const root = found.root;
  const config = await loadConfig(ctx.env, root);
  // An older lifeline killed half-way through a rollback may have left the harness set aside:
  // put it back rather than create it anew.
  await recoverRepo(root, { now: ctx.now(), pid: ctx.pid });
  const { created, kept } = await initHarness(root, {
    maxIterations: config.breaker.maxIterations,
    threshold: config.breaker.threshold,
    lang: config.harness.language,
  });
  const relative = (path: string) => relativeTo(root, path);
  if (values.json) {
    ctx.out.json({ root, created: created.map(relative), kept: kept.map(relative) });
  } else {
    for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line);
    for (const path of created) ctx.out.line(`created ${relative(path)}`);
    for (const path of kept) ctx.out.line(`kept    ${relative(path)}`);
    ctx.out.line(
      created.length === 0 ? "The harness was already complete." : "The harness is ready.",
    );
  }
  return EXIT.ok;
}
