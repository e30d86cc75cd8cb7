/**
 * `lifeline fail list`: the backups rollbacks saved, newest first.
 *
 * @module
 */

import { type Context, EXIT } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { loadConfig } from "../lib/state/config.ts";
import { backupReport } from "../lib/harness/housekeeping.ts";
import { bytesText } from "../lib/harness/wording.ts";

export const help = `Usage: lifeline fail list [--root DIR] [--json]

Lists the backups under refs/lifeline/backups/, newest first: the ref, when it was made, the
task, what it holds (files and bytes, and how many of those bytes were neither staged nor
committed: what it adds to the repository) and its scope ("." for the whole repository). The
last line adds them up against breaker.maxBackupsMB, beyond which rollbacks are refused.

Restore one with \`lifeline fail restore <ref>\`; remove old ones with \`lifeline fail prune\`.

Options:
  --root DIR   the project (default: the nearest .claude/ or git top level at or above .)
  --json       {"root", "backups": [...], "new_bytes", "bound_bytes"}
  -h, --help`;

const size = (bytes: number | null) => (bytes === null ? "?" : bytesText(bytes));

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, { root: { type: "string" }, json: { type: "boolean" } });
  const found = await projectRoot(values.root, ctx, { harness: true });
  const root = found.root;
  const report = await backupReport(root, await loadConfig(ctx.env, root));
  const backups = report?.backups ?? [];
  if (values.json) {
    ctx.out.json({
      root,
      backups,
      new_bytes: report?.newBytes ?? 0,
      bound_bytes: report?.boundBytes ?? null,
    });
    return EXIT.ok;
  }
  for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line);
  if (!report) ctx.out.line(`${root} is not in a git repository: no backups`);
  for (const b of backups) {
    ctx.out.line(
      `${b.ref}  ${new Date(b.created).toISOString()}  task ${b.task}  ${b.files ?? "?"} files, ${
        size(b.bytes)
      } (${size(b.new_bytes)} new)  scope ${b.scope === null ? "?" : b.scope || "."}`,
    );
  }
  if (report) {
    ctx.out.line(
      `${backups.length} backups, ${size(report.newBytes)} new of ${
        size(report.boundBytes)
      } allowed (breaker.maxBackupsMB)`,
    );
  }
  return EXIT.ok;
}
