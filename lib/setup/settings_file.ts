/**
 * A Claude Code settings file as `init` and `uninstall` change it: read and refused with the
 * reason when it cannot be changed safely, then backed up next to itself and replaced atomically,
 * with its permissions kept, through a link to where the link leads.
 *
 * @module
 */

import { CliError } from "../core/cli.ts";
import { dirName } from "../core/path.ts";
import { setJsonFields } from "../core/json_text.ts";
import { compactStamp } from "../core/text.ts";
import { misshapenEvents, readSettings, settingsTarget } from "../claude/settings.ts";
import { writeFileAtomic, writeNewFile } from "../state/store.ts";

/** A settings file that can be changed: its text as read (null: missing) and its object. */
export interface OpenSettings {
  path: string;
  /** The file's text, or null when there is no file yet. */
  text: string | null;
  value: Record<string, unknown>;
}

/**
 * Reads a settings file to change it. Throws {@linkcode CliError} when it is not valid JSON or
 * not an object; with `merge`, also when its hooks have a shape a merge would have to replace.
 */
export async function openSettings(path: string, { merge }: { merge: boolean }) {
  const read = await readSettings(path);
  const again = merge ? "run lifeline init again" : "run the command again";
  if (read.kind === "invalid") {
    throw new CliError(
      `${path} is not valid JSON at line ${read.line}, column ${read.column} (${read.reason}); left it unchanged`,
      `fix that line (a trailing comma is the usual cause), then ${again}`,
    );
  }
  if (read.kind === "not an object") {
    throw new CliError(
      `${path} holds ${read.found}, not a JSON object; left it unchanged`,
      `a settings file is one JSON object, e.g. {"hooks": {}}; fix it, then ${again}`,
    );
  }
  const value = read.kind === "ok" ? read.value : {};
  if (merge) refuseMisshapen(path, value);
  return { path, text: read.kind === "ok" ? read.text : null, value } satisfies OpenSettings;
}

function refuseMisshapen(path: string, value: Record<string, unknown>): void {
  const hooks = value.hooks;
  if (
    hooks !== undefined && (typeof hooks !== "object" || hooks === null || Array.isArray(hooks))
  ) {
    throw new CliError(
      `${path}: "hooks" is not an object; left the file unchanged`,
      "fix it by hand first",
    );
  }
  const misshapen = misshapenEvents(value);
  if (misshapen.length > 0) {
    throw new CliError(
      `${path}: ${misshapen.map((event) => `"hooks.${event}"`).join(", ")} ${
        misshapen.length === 1 ? "is" : "are"
      } not a list of matcher groups; left the file unchanged`,
      `write it as a list, e.g. "${misshapen[0]}": [{"matcher": "*", "hooks": [...]}], ` +
        "then run lifeline init again",
    );
  }
}

/**
 * Writes `settings` to an opened file: the old text is first copied to
 * `<path>.bak-<time>` (`-2`, `-3`, … when that name is taken), with the file's mode and owner,
 * since settings may hold tokens. Only the `hooks` member's text changes (see
 * {@linkcode settingsText}); the file keeps its mode and its owner (init run with sudo does not
 * hand a user's file to root). A link (settings kept in a dotfiles repository) is written where it
 * leads. Returns the backup's path (null when there was no file).
 */
export async function writeSettings(
  file: OpenSettings,
  settings: Record<string, unknown>,
  { now }: { now: number },
): Promise<string | null> {
  const target = await settingsTarget(file.path);
  let keep: { mode: number; owner?: { uid: number; gid: number } } | undefined;
  let backup: string | null = null;
  if (file.text !== null) {
    const info = await Deno.stat(target);
    keep = {
      mode: (info.mode ?? 0o644) & 0o7777,
      ...(info.uid !== null && info.gid !== null
        ? { owner: { uid: info.uid, gid: info.gid } }
        : {}),
    };
    backup = await saveBackup(file.path, file.text, { at: compactStamp(now), ...keep });
  } else {
    await Deno.mkdir(dirName(target), { recursive: true });
  }
  await writeFileAtomic(target, settingsText(settings, file.text), {
    root: dirName(target),
    ...keep,
  });
  return backup;
}

/**
 * The text a settings object is written as: when the file had text, that text with only its
 * `hooks` member rewritten (indented like the rest; removed when `settings` has none), so that
 * every other byte stays the user's (numbers as written, duplicate keys, spacing); else the
 * object, indented.
 */
export function settingsText(
  settings: Record<string, unknown>,
  text: string | null = null,
): string {
  if (text === null || text.trim() === "") return JSON.stringify(settings, null, 2) + "\n";
  return setJsonFields(text, { hooks: settings.hooks }, { pretty: true });
}

async function saveBackup(
  path: string,
  text: string,
  { at, mode, owner }: { at: string; mode: number; owner?: { uid: number; gid: number } },
): Promise<string> {
  for (let n = 1;; n++) {
    const backup = `${path}.bak-${at}${n === 1 ? "" : `-${n}`}`;
    try {
      await writeNewFile(backup, text, { root: dirName(path), mode, owner });
      return backup;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
  }
}
