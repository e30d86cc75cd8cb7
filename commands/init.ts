/**
 * `lifeline init`: merges the recommended hooks into a Claude Code settings file, and keeps
 * lifeline's per-session state out of git; `--remove` takes the hooks out again.
 *
 * @module
 */

import { type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { type ProjectRoot, projectRoot, rootLines } from "../lib/state/project_root.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { absolutePath } from "../lib/core/path.ts";
import { binaryCommand } from "../lib/host/self.ts";
import { mergeHooks, removeHooks, type Scope, settingsPath } from "../lib/claude/settings.ts";
import { type ExcludeResult, keepStateOutOfGit } from "../lib/setup/git_exclude.ts";
import { openSettings, settingsText, writeSettings } from "../lib/setup/settings_file.ts";
import { describeError } from "../lib/state/store.ts";

export const help =
  `Usage: lifeline init [--scope user|project|local | --settings PATH] [--remove] [--gitignore]
                     [--dry-run] [--root DIR] [--json]

Adds lifeline's hooks to a Claude Code settings file:

  SessionStart         lifeline hook crash
  UserPromptSubmit     lifeline hook remind
  PostToolUse          lifeline hook heartbeat ("async": true), lifeline hook track
  PostToolUseFailure   lifeline hook track
  StopFailure          lifeline hook track
  Stop                 lifeline hook track
  SessionEnd           lifeline hook heartbeat (a session you quit is ended, not dead)

Running it again adds nothing: lifeline entries are recognised whatever path they call the
binary by, and left as you wrote them (wrappers, flags, environment, redirections, async,
timeouts); only a lifeline path that no longer exists is pointed at this one, in place. Every
other key, hook and entry is kept, byte for byte: only the "hooks" member's text is rewritten.
The file is backed up next to itself (settings.json.bak-<time>) before it is written,
atomically, with its permissions and owner kept; a settings.json that is a link (dotfiles) is
written where it leads. A file that is not valid JSON, or whose hooks have a shape lifeline does
not know, is left alone, with the reason.

The hooks call \`lifeline\` when it is on PATH, or else this binary by its absolute path.

In a git repository it also adds lifeline's per-session state (sessions/*/heartbeat,
session.json, outbox.jsonl, lock files, logs/error-recovery.log, .lifeline/ but its
config.json, …) to .git/info/exclude, as one marked block, so that \`git add -A\` never commits
it; a tracked .gitignore only with --gitignore.

Options:
  --scope S        user (~/.claude/settings.json, or $CLAUDE_CONFIG_DIR; the default),
                   project (.claude/settings.json), local (.claude/settings.local.json)
  --settings PATH  this settings file instead
  --remove         take lifeline's hooks out of the file, and nothing else (backed up too)
  --gitignore      write the block to the root's .gitignore instead of .git/info/exclude
  --dry-run        print what would change and the result; write nothing
  --root DIR       the project, for --scope project|local and git (default: the nearest
                   .claude/ or git top level at or above .)
  --json           print {"root", "path", "added", "updated", "unchanged", "backup", "written",
                   "exclude"} ({"root", "path", "removed", "backup", "written"} with --remove)
  -h, --help`;

/** A parsed invocation. */
interface InitArgs {
  path: string;
  root: string;
  found: ProjectRoot;
  /** The file is the project's (--scope project|local): its root is worth saying. */
  inProject: boolean;
  remove: boolean;
  gitignore: boolean;
  dryRun: boolean;
  json: boolean;
}

async function parse(ctx: Context): Promise<InitArgs> {
  const { values } = parseFlags(ctx.args, {
    scope: { type: "string" },
    settings: { type: "string" },
    remove: { type: "boolean" },
    gitignore: { type: "boolean" },
    "dry-run": { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.scope !== undefined && values.settings !== undefined) {
    throw new UsageError("use --scope or --settings, not both");
  }
  if (values.remove && values.gitignore) {
    throw new UsageError("--gitignore adds patterns; it has no use with --remove");
  }
  const scope = (values.scope ?? "user") as Scope;
  if (!["user", "project", "local"].includes(scope)) {
    throw new UsageError(`--scope must be user, project or local, got "${values.scope}"`);
  }
  const found = await projectRoot(values.root, ctx);
  const root = found.root;
  return {
    path: values.settings !== undefined
      ? absolutePath(values.settings, ctx.cwd)
      : settingsPath(scope, ctx.env, root),
    root,
    found,
    inProject: values.settings === undefined && scope !== "user",
    remove: values.remove === true,
    gitignore: values.gitignore === true,
    dryRun: values["dry-run"] === true,
    json: values.json === true,
  };
}

export async function run(ctx: Context): Promise<number> {
  const args = await parse(ctx);
  const file = await openSettings(args.path, { merge: !args.remove });
  const change = args.remove
    ? { ...removeHooks(file.value), added: [], updated: [], unchanged: [] }
    : { ...mergeHooks(file.value, await binaryCommand(ctx.env), { missing }), removed: [] };
  const changed = change.added.length + change.updated.length + change.removed.length > 0 ||
    (file.text === null && !args.remove);
  const write = changed && !args.dryRun;
  const backup = write ? await writeSettings(file, change.settings, { now: ctx.now() }) : null;
  // The hooks are in; a git directory that cannot be written is said, not an init that failed.
  const exclude = args.remove
    ? null
    : await keepStateOutOfGit(args.root, { gitignore: args.gitignore, dryRun: args.dryRun })
      .catch((error) => ({ error: describeError(error) }));
  if (args.json) {
    const { path } = args;
    const root = args.inProject ? args.root : null;
    ctx.out.json(
      args.remove
        ? { root, path, removed: change.removed, backup, written: write }
        : { root, path, ...pick(change), backup, written: write, exclude },
    );
    return EXIT.ok;
  }
  if (args.inProject) { for (const line of rootLines(args.found, ctx.cwd)) ctx.out.line(line); }
  for (const label of change.added) ctx.out.line(`+ ${label}`);
  for (const label of change.updated) ctx.out.line(`~ ${label}`);
  for (const label of change.removed) ctx.out.line(`- ${label}`);
  if (args.dryRun) {
    ctx.out.line(
      changed ? `Would write ${args.path}:` : `${args.path} is up to date; nothing would change.`,
    );
    if (changed) ctx.out.line(settingsText(change.settings, file.text).trimEnd());
  } else if (write) {
    ctx.out.line(`Wrote ${args.path}${backup ? ` (backup: ${backup})` : ""}.`);
  } else {
    ctx.out.line(
      args.remove
        ? `${args.path} has no lifeline hooks; nothing changed.`
        : `${args.path} already has lifeline's hooks; nothing changed.`,
    );
  }
  if (exclude) ctx.out.line(excludeLine(exclude, args.dryRun));
  return EXIT.ok;
}

/** Whether a lifeline path named in a hook command is gone (then init points it at this one). */
function missing(path: string): boolean {
  try {
    Deno.statSync(path);
    return false;
  } catch (error) {
    return error instanceof Deno.errors.NotFound;
  }
}

function pick({ added, updated, unchanged }: Record<"added" | "updated" | "unchanged", string[]>) {
  return { added, updated, unchanged };
}

function excludeLine(exclude: ExcludeResult | { error: string }, dryRun: boolean): string {
  if ("error" in exclude) {
    return `Could not keep lifeline's per-session state out of git: ${exclude.error}`;
  }
  const { file, changed } = exclude;
  if (!changed) return `${file} already keeps lifeline's per-session state out of git.`;
  return `${dryRun ? "Would add" : "Added"} lifeline's per-session state to ${file}, ` +
    "so that `git add -A` leaves it out.";
}
