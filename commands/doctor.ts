/**
 * `lifeline doctor`: checks a setup and says, for each problem, the fix in one line. The checks
 * are in `lib/setup/doctor.ts`.
 *
 * @module
 */

import { type Context, EXIT } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { checksHelp, runChecks } from "../lib/setup/doctor.ts";

export const help = `Usage: lifeline doctor [--root DIR] [--json]

Checks the setup; each check prints ok, warn or fail, with the fix in one line:

${checksHelp()}

Exits 1 when any check fails.

Options:
  --root DIR   the project (default: the nearest .claude/ or git top level at or above .)
  --json       {"root", "ok", "checks": [{"name", "status", "message", "fix"}]}
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, { root: { type: "string" }, json: { type: "boolean" } });
  const found = await projectRoot(values.root, ctx);
  const root = found.root;
  const checks = await runChecks({ env: ctx.env, root, now: ctx.now() });
  const failed = checks.some((c) => c.status === "fail");
  if (values.json) {
    ctx.out.json({ root, ok: !failed, checks });
  } else {
    for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line);
    for (const c of checks) {
      ctx.out.line(`${c.status.padEnd(4)}  ${c.name.padEnd(9)}  ${c.message}`);
      if (c.fix && c.status !== "ok") ctx.out.line(`${"".padEnd(17)}fix: ${c.fix}`);
    }
    ctx.out.line(failed ? "Some checks failed." : "No check failed.");
  }
  return failed ? EXIT.error : EXIT.ok;
}
