/**
 * `lifeline fail restore`: puts back the working tree a rollback saved.
 *
 * @module
 */

import { type Context, existingRoot, EXIT, UsageError } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { eventLine, isoSeconds } from "../lib/harness/files.ts";
import { harnessPaths } from "../lib/state/layout.ts";
import { restoreBackup } from "../lib/harness/rollback.ts";
import { appendText, stateFileExists } from "../lib/state/store.ts";

export const help = `Usage: lifeline fail restore <backup-ref> [--force] [--root DIR] [--json]

Puts back what a rollback by \`lifeline fail handle\` saved under refs/lifeline/backups/…: HEAD,
the index (what was staged) and every file of the working tree, untracked ones included.
lifeline's own state (.EnjoyHarness/, .trace/, sessions/, logs/, .lifeline/) is left as it is.

It refuses when the working tree changed since the rollback, because restoring would overwrite
that work. --force restores anyway, after saving the current tree under a new backup ref.

List the backups with: git for-each-ref refs/lifeline/backups

Options:
  --force      restore over newer changes (they are saved first)
  --root DIR   the project (default: .)
  --json       print the result as one JSON object
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values, positionals } = parseFlags(ctx.args, {
    force: { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  }, { maxPositionals: 1 });
  const ref = positionals[0];
  if (!ref) throw new UsageError("missing the backup ref to restore");
  const root = await existingRoot(values.root, ctx.cwd);
  const result = await restoreBackup(root, ref, { force: values.force === true, now: ctx.now() });
  const log = harnessPaths(root).eventLog;
  if (stateFileExists(log, { root })) {
    const line = eventLine(
      isoSeconds(ctx.now()),
      "RESTORE",
      `恢复 ${result.backup.ref}`,
      "SUCCESS",
    );
    await appendText(log, line + "\n", { root });
  }
  if (values.json) {
    ctx.out.json({
      restored: result.backup.ref,
      head: result.backup.preHead,
      saved_first: result.savedFirst ?? null,
    });
  } else {
    if (result.savedFirst) ctx.out.line(`saved the newer changes first under ${result.savedFirst}`);
    ctx.out.line(
      `restored ${result.backup.ref}: HEAD ${
        result.backup.preHead.slice(0, 12)
      }, index and work tree as they were`,
    );
  }
  return EXIT.ok;
}
