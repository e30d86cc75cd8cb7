/**
 * `lifeline fail prune`: removes old rollback backups.
 *
 * @module
 */

import { type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { ageFlag, integerFlag, parseFlags } from "../lib/core/flags.ts";
import { pruneBackups } from "../lib/harness/housekeeping.ts";

export const help =
  `Usage: lifeline fail prune (--keep N | --older-than AGE) [--dry-run] [--root DIR] [--json]

Deletes backup refs under refs/lifeline/backups/: all but the newest N (--keep), or those older
than AGE (--older-than 30d, 12h or 90m), or both. A backup that an interrupted run still needs
is kept. The objects only those backups held are freed by git's next gc (\`git gc\`).

Options:
  --keep N          keep the newest N backups
  --older-than AGE  delete backups older than AGE: a number and d, h or m
  --dry-run         print what would be deleted; delete nothing
  --root DIR        the project (default: the nearest .claude/ or git top level at or above .)
  --json            {"root", "removed": [...], "kept": N, "dry_run"}
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, {
    keep: { type: "string" },
    "older-than": { type: "string" },
    "dry-run": { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.keep === undefined && values["older-than"] === undefined) {
    throw new UsageError("give --keep N or --older-than AGE (nothing is pruned by default)");
  }
  const keep = values.keep === undefined ? null : integerFlag("keep", values.keep, 0);
  const olderThanMs = values["older-than"] === undefined
    ? null
    : ageFlag("older-than", values["older-than"], "30d");
  const found = await projectRoot(values.root, ctx, { harness: true });
  const root = found.root;
  const dryRun = values["dry-run"] === true;
  const result = await pruneBackups(root, { keep, olderThanMs, now: ctx.now(), dryRun });
  if (values.json) {
    ctx.out.json({
      root,
      removed: result.removed.map((b) => b.ref),
      kept: result.kept,
      dry_run: dryRun,
    });
    return EXIT.ok;
  }
  for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line);
  for (const b of result.removed) ctx.out.line(`${dryRun ? "would delete" : "deleted"} ${b.ref}`);
  ctx.out.line(`${result.removed.length} ${dryRun ? "would be " : ""}deleted, ${result.kept} kept`);
  return EXIT.ok;
}
