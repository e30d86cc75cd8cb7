/**
 * `lifeline init`: merges the recommended hooks into a Claude Code settings file.
 *
 * @module
 */

import { CliError, type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { binaryCommand } from "../lib/host/self.ts";
import { absolutePath, dirName } from "../lib/core/path.ts";
import {
  mergeHooks,
  misshapenEvents,
  readSettings,
  type Scope,
  settingsPath,
  settingsTarget,
} from "../lib/claude/settings.ts";
import { writeFileAtomic, writeNewFile } from "../lib/state/store.ts";

export const help =
  `Usage: lifeline init [--scope user|project|local | --settings PATH] [--dry-run] [--root DIR] [--json]

Adds lifeline's hooks to a Claude Code settings file:

  SessionStart         lifeline hook crash
  UserPromptSubmit     lifeline hook remind
  PostToolUse          lifeline hook heartbeat ("async": true), lifeline hook track
  PostToolUseFailure   lifeline hook track
  StopFailure          lifeline hook track
  Stop                 lifeline hook track

Running it again adds nothing: lifeline entries are recognised whatever path they call the
binary by, and updated in place. Every other key, hook and entry is kept. The file is backed up
next to itself (settings.json.bak-<time>) before it is written, atomically, with its permissions
kept; a settings.json that is a link (dotfiles) is written where it leads. A file that is not
valid JSON, or whose hooks have a shape lifeline does not know, is left alone, with the reason.

The hooks call \`lifeline\` when it is on PATH, or else this binary by its absolute path.

Options:
  --scope S        user (~/.claude/settings.json, or $CLAUDE_CONFIG_DIR; the default),
                   project (.claude/settings.json), local (.claude/settings.local.json)
  --settings PATH  this settings file instead
  --dry-run        print what would change and the result; write nothing
  --root DIR       the project, for --scope project|local (default: the nearest .claude/ or
                   git top level at or above .)
  --json           print {"root", "path", "added", "updated", "unchanged", "backup", "written"}
  -h, --help`;

function stamp(now: number): string {
  return new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/** Copies the settings to `<path>.bak-<stamp>` (`-2`, `-3`, … when that name is taken). */
async function saveBackup(path: string, text: string, at: string, mode: number): Promise<string> {
  for (let n = 1;; n++) {
    const backup = `${path}.bak-${at}${n === 1 ? "" : `-${n}`}`;
    try {
      await writeNewFile(backup, text, { root: dirName(path), mode });
      return backup;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
  }
}

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, {
    scope: { type: "string" },
    settings: { type: "string" },
    "dry-run": { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.scope !== undefined && values.settings !== undefined) {
    throw new UsageError("use --scope or --settings, not both");
  }
  const scope = (values.scope ?? "user") as Scope;
  if (!["user", "project", "local"].includes(scope)) {
    throw new UsageError(`--scope must be user, project or local, got "${values.scope}"`);
  }
  // The project matters for its own settings files only.
  const found = await projectRoot(values.root, ctx);
  const inProject = values.settings === undefined && scope !== "user";
  const path = values.settings !== undefined
    ? absolutePath(values.settings, ctx.cwd)
    : settingsPath(scope, ctx.env, found.root);
  const read = await readSettings(path);
  if (read.kind === "invalid") {
    throw new CliError(
      `${path} is not valid JSON at line ${read.line}, column ${read.column} (${read.reason}); left it unchanged`,
      "fix that line (a trailing comma is the usual cause), then run lifeline init again",
    );
  }
  if (read.kind === "not an object") {
    throw new CliError(
      `${path} holds ${read.found}, not a JSON object; left it unchanged`,
      'a settings file is one JSON object, e.g. {"hooks": {}}; fix it, then run lifeline init again',
    );
  }
  const current = read.kind === "ok" ? read.value : {};
  if (
    current.hooks !== undefined &&
    (typeof current.hooks !== "object" || Array.isArray(current.hooks))
  ) {
    throw new CliError(
      `${path}: "hooks" is not an object; left the file unchanged`,
      "fix it by hand first",
    );
  }
  const misshapen = misshapenEvents(current);
  if (misshapen.length > 0) {
    throw new CliError(
      `${path}: ${misshapen.map((event) => `"hooks.${event}"`).join(", ")} ${
        misshapen.length === 1 ? "is" : "are"
      } not a list of matcher groups; left the file unchanged`,
      `write it as a list, e.g. "${misshapen[0]}": [{"matcher": "*", "hooks": [...]}], ` +
        "then run lifeline init again",
    );
  }
  const merged = mergeHooks(current, await binaryCommand(ctx.env));
  const changed = merged.added.length > 0 || merged.updated.length > 0 || read.kind === "missing";
  const text = JSON.stringify(merged.settings, null, 2) + "\n";
  let backup: string | null = null;
  let written = false;
  if (!values["dry-run"] && changed) {
    // A link (settings kept in a dotfiles repository) is written where it leads, and an existing
    // file keeps its permissions, its backup too: settings may hold tokens.
    const target = await settingsTarget(path);
    let mode: number | undefined;
    if (read.kind === "ok") {
      mode = ((await Deno.stat(target)).mode ?? 0o644) & 0o7777;
      backup = await saveBackup(path, read.text, stamp(ctx.now()), mode);
    } else {
      await Deno.mkdir(dirName(target), { recursive: true });
    }
    await writeFileAtomic(target, text, { root: dirName(target), mode });
    written = true;
  }
  if (values.json) {
    ctx.out.json({
      root: inProject ? found.root : null,
      path,
      added: merged.added,
      updated: merged.updated,
      unchanged: merged.unchanged,
      backup,
      written,
    });
    return EXIT.ok;
  }
  if (inProject) { for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line); }
  for (const label of merged.added) ctx.out.line(`+ ${label}`);
  for (const label of merged.updated) ctx.out.line(`~ ${label}`);
  if (values["dry-run"]) {
    ctx.out.line(changed ? `Would write ${path}:` : `${path} is up to date; nothing would change.`);
    if (changed) ctx.out.line(text.trimEnd());
  } else if (written) {
    ctx.out.line(`Wrote ${path}${backup ? ` (backup: ${backup})` : ""}.`);
  } else {
    ctx.out.line(`${path} already has lifeline's hooks; nothing changed.`);
  }
  return EXIT.ok;
}
