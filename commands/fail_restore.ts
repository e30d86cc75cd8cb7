/**
 * `lifeline fail restore`: puts back what a rollback saved.
 *
 * @module
 */

import { type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { loadConfig } from "../lib/state/config.ts";
import { isoSeconds } from "../lib/harness/breaker_policy.ts";
import { appendEvents } from "../lib/harness/files.ts";
import { restoreBackup } from "../lib/harness/rollback.ts";
import { insideGitCommand, refusedInsideGit } from "../lib/harness/repo.ts";
import { harnessPaths } from "../lib/state/layout.ts";
import { pathExists } from "../lib/state/store.ts";

export const help = `Usage: lifeline fail restore <backup-ref> [--force] [--root DIR] [--json]

Puts back exactly what a rollback by \`lifeline fail handle\` saved under refs/lifeline/backups/…:
every file it overwrote or deleted (byte for byte, with its mode; links as links), the index
(staged changes, intent-to-add and skip-worktree entries) and, when the rollback moved the
branch, HEAD. lifeline's own state (sessions/, logs/, .lifeline/, .claims/, .EnjoyHarness/,
.trace/) and everything outside the backup's scope are left as they are.

It refuses when something it would overwrite changed since the rollback (HEAD, the index, a
file), naming it. --force restores anyway, after saving the current state under a new backup.
A rollback or restore that a killed run left half-done is finished first.

List the backups with: lifeline fail list

Options:
  --force      restore over newer changes (they are saved first)
  --root DIR   the project (default: the nearest .claude/ or git top level at or above .)
  --json       print the result as one JSON object
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values, positionals } = parseFlags(ctx.args, {
    force: { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  }, { maxPositionals: 1 });
  const ref = positionals[0];
  if (!ref) throw new UsageError("missing the backup ref to restore (see `lifeline fail list`)");
  const insideGit = insideGitCommand(ctx.env);
  if (insideGit) throw refusedInsideGit(insideGit);
  const found = await projectRoot(values.root, ctx, { harness: true });
  const root = found.root;
  const config = await loadConfig(ctx.env, root);
  const result = await restoreBackup(root, ref, {
    force: values.force === true,
    run: { now: ctx.now(), pid: ctx.pid },
  });
  if (await pathExists(harnessPaths(root).eventLog)) {
    const event = { kind: "restore" as const, ts: isoSeconds(ctx.now()), ref: result.backup.ref };
    await appendEvents(root, [event], config.harness.language);
  }
  const m = result.backup.manifest;
  if (values.json) {
    ctx.out.json({
      root,
      restored: result.backup.ref,
      head: m.pre_head,
      head_moved: m.move_head,
      scope: m.scope || ".",
      files: m.files,
      saved_first: result.savedFirst,
      already_as_saved: result.alreadyAsSaved === true,
    });
    return EXIT.ok;
  }
  for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line);
  if (result.savedFirst) ctx.out.line(`saved the current state first under ${result.savedFirst}`);
  if (result.alreadyAsSaved) {
    ctx.out.line(
      `${result.backup.ref}: nothing to restore: the project is as this backup holds it (its ` +
        "rollback changed nothing, or it was restored already)",
    );
    return EXIT.ok;
  }
  ctx.out.line(
    `restored ${result.backup.ref}: ${
      m.move_head ? `HEAD ${m.pre_head.slice(0, 12)}` : `${m.scope}/ (HEAD did not move)`
    }, index and work tree as they were`,
  );
  return EXIT.ok;
}
