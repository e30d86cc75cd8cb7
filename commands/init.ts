/**
 * `lifeline init`: merges the recommended hooks into a Claude Code settings file.
 *
 * @module
 */

import { CliError, type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { absolutePath, baseName, joinPath } from "../lib/core/path.ts";
import { mergeHooks, readSettings, type Scope, settingsPath } from "../lib/claude/settings.ts";
import { writeFileAtomic } from "../lib/state/store.ts";

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
next to itself (settings.json.bak-<time>) before it is written, atomically. A file that is not
valid JSON is left alone, with its line and column reported.

The hooks call \`lifeline\` when it is on PATH, or else this binary by its absolute path.

Options:
  --scope S        user (~/.claude/settings.json, or $CLAUDE_CONFIG_DIR; the default),
                   project (.claude/settings.json), local (.claude/settings.local.json)
  --settings PATH  this settings file instead
  --dry-run        print what would change and the result; write nothing
  --root DIR       the project, for --scope project|local (default: .)
  --json           print {"path", "added", "updated", "unchanged", "backup", "written"}
  -h, --help`;

/** Finds `name` on PATH. */
export async function onPath(name: string, path: string | undefined): Promise<string | null> {
  for (const dir of (path ?? "").split(Deno.build.os === "windows" ? ";" : ":")) {
    if (!dir) continue;
    for (const candidate of Deno.build.os === "windows" ? [`${name}.exe`, name] : [name]) {
      try {
        const info = await Deno.stat(joinPath(dir, candidate));
        if (info.isFile && (Deno.build.os === "windows" || ((info.mode ?? 0) & 0o111) !== 0)) {
          return joinPath(dir, candidate);
        }
      } catch {
        // not here
      }
    }
  }
  return null;
}

function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `"${word.replaceAll('"', '\\"')}"`;
}

/**
 * The binary's runtime flags, for hooks that run lifeline from source (tests/project_test.ts checks
 * them against the tasks and the release build). All permissions: lifeline reads `/proc` for
 * process identity, which Deno allows only with --allow-all, and the unscoped --allow-run it needs
 * anyway is, as Deno's own documentation warns, "effectively the same as allow-all". And a young
 * generation capped at 2 MiB: V8 otherwise grows it with every collection that finds live data,
 * up to 16 MiB a half, and the daemon scavenging a long transcript would end far above its
 * 64 MiB budget (hooks allocate too little to notice).
 */
export const SOURCE_RUN_FLAGS = ["--allow-all", "--v8-flags=--max-semi-space-size=2"];

/**
 * How hooks should call lifeline: `lifeline` when that is on PATH; else this binary's absolute
 * path; when running from source (`deno run`), the full `deno run … main.ts` command line.
 */
export async function binaryCommand(env: Readonly<Record<string, string>>): Promise<string> {
  if (await onPath("lifeline", env.PATH)) return "lifeline";
  const exec = Deno.execPath();
  if (!/^deno(\.exe)?$/.test(baseName(exec))) return quote(exec);
  const main = new URL("../main.ts", import.meta.url).pathname;
  return [exec, "run", "--quiet", ...SOURCE_RUN_FLAGS, main].map(quote).join(" ");
}

function stamp(now: number): string {
  return new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/** Copies the settings to `<path>.bak-<stamp>` (`-2`, `-3`, … when that name is taken). */
async function saveBackup(path: string, text: string, at: string): Promise<string> {
  for (let n = 1;; n++) {
    const backup = `${path}.bak-${at}${n === 1 ? "" : `-${n}`}`;
    try {
      await Deno.writeTextFile(backup, text, { createNew: true });
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
  const root = absolutePath(values.root ?? ".", ctx.cwd);
  const path = values.settings !== undefined
    ? absolutePath(values.settings, ctx.cwd)
    : settingsPath(scope, ctx.env, root);
  const read = await readSettings(path);
  if (read.kind === "invalid") {
    throw new CliError(
      `${path} is not valid JSON at line ${read.line}, column ${read.column} (${read.reason}); left it unchanged`,
      "fix that line (a trailing comma is the usual cause), then run lifeline init again",
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
  const merged = mergeHooks(current, await binaryCommand(ctx.env));
  const changed = merged.added.length > 0 || merged.updated.length > 0 || read.kind === "missing";
  const text = JSON.stringify(merged.settings, null, 2) + "\n";
  let backup: string | null = null;
  let written = false;
  if (!values["dry-run"] && changed) {
    if (read.kind === "ok") {
      backup = await saveBackup(path, read.text, stamp(ctx.now()));
    }
    await writeFileAtomic(path, text);
    written = true;
  }
  if (values.json) {
    ctx.out.json({
      path,
      added: merged.added,
      updated: merged.updated,
      unchanged: merged.unchanged,
      backup,
      written,
    });
    return EXIT.ok;
  }
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
