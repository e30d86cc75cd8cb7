/**
 * Claude Code's settings files (reference §3): where they are, reading them with the line and
 * column of a syntax error, and merging lifeline's hooks into them without disturbing anything
 * else. The merge is a pure function.
 *
 * @module
 */

import { HOOK_NAMES, type HookName } from "./hook_names.ts";
import { parseJsonText } from "../core/json_text.ts";
import { dirName, joinPath } from "../core/path.ts";
import { claudeConfigDir } from "../state/layout.ts";
import { readStateText } from "../state/store.ts";

/** The settings scopes `lifeline init` writes to. */
export type Scope = "user" | "project" | "local";

/** A scope's settings file. */
export function settingsPath(
  scope: Scope,
  env: Readonly<Record<string, string>>,
  root: string,
): string {
  if (scope === "user") return joinPath(claudeConfigDir(env), "settings.json");
  return joinPath(root, ".claude", scope === "project" ? "settings.json" : "settings.local.json");
}

/** The managed (policy) settings file of this platform. */
export function managedSettingsPath(): string {
  if (Deno.build.os === "darwin") {
    return "/Library/Application Support/ClaudeCode/managed-settings.json";
  }
  if (Deno.build.os === "windows") return "C:\\Program Files\\ClaudeCode\\managed-settings.json";
  return "/etc/claude-code/managed-settings.json";
}

/** Every settings file Claude Code reads, with its scope name. */
export function allSettingsPaths(
  env: Readonly<Record<string, string>>,
  root: string,
): { scope: string; path: string }[] {
  return [
    { scope: "user", path: settingsPath("user", env, root) },
    { scope: "project", path: settingsPath("project", env, root) },
    { scope: "local", path: settingsPath("local", env, root) },
    { scope: "managed", path: managedSettingsPath() },
  ];
}

/** A settings file as read. */
export type SettingsRead =
  | { kind: "missing" }
  | { kind: "ok"; text: string; value: Record<string, unknown> }
  | { kind: "invalid"; text: string; line: number; column: number; reason: string }
  /** Valid JSON, but not the object a settings file is (`[]`, `null`, a string). */
  | { kind: "not an object"; text: string; found: string };

/** Largest settings file read; real ones are a few KiB. */
const MAX_SETTINGS_BYTES = 4 << 20;

/**
 * The file a settings path stands for: the path itself, or, when it is a link (settings kept in
 * a dotfiles repository), the file the link leads to, so that it is read and written there.
 */
export async function settingsTarget(path: string): Promise<string> {
  try {
    return await Deno.realPath(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return path; // not there yet (or a link to nothing: writing it creates a plain file)
  }
}

/**
 * Reads and parses a settings file (through links, like Claude Code; a FIFO or device is
 * refused). A syntax error carries its line and column. A leading byte-order mark is allowed: the
 * store's UTF-8 decoding drops it (and JSON written back has none, as RFC 8259 asks).
 */
export async function readSettings(path: string): Promise<SettingsRead> {
  const target = await settingsTarget(path);
  let text: string;
  try {
    text = await readStateText(target, { root: dirName(target), maxBytes: MAX_SETTINGS_BYTES });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kind: "missing" };
    throw error;
  }
  if (text.trim() === "") return { kind: "ok", text, value: {} };
  const parsed = parseJsonText(text);
  if (!parsed.ok) return { kind: "invalid", text, ...parsed.error };
  if (!parsed.value || typeof parsed.value !== "object" || Array.isArray(parsed.value)) {
    const found = Array.isArray(parsed.value)
      ? "an array"
      : parsed.value === null
      ? "null"
      : `a ${typeof parsed.value}`;
    return { kind: "not an object", text, found };
  }
  return { kind: "ok", text, value: parsed.value as Record<string, unknown> };
}

/**
 * The events lifeline adds hooks to whose value is not a list of matcher groups (e.g. an object):
 * a merge would have to replace them, dropping what they hold, so the file is refused instead.
 */
export function misshapenEvents(settings: Record<string, unknown>): string[] {
  const hooks = settings.hooks;
  if (!hooks || typeof hooks !== "object" || Array.isArray(hooks)) return [];
  const events = new Set(RECOMMENDED_HOOKS.map((h) => h.event));
  return Object.entries(hooks)
    .filter(([event, list]) =>
      events.has(event) && list !== undefined && list !== null && !Array.isArray(list)
    )
    .map(([event]) => event);
}

/**
 * The hooks lifeline adds, in the exact shape of the client's settings type (`Settings["hooks"]`
 * in the SDK; tests/sdk_types/settings_types_test.ts checks it).
 */
export type LifelineHooks = Record<
  string,
  { matcher?: string; hooks: { type: "command"; command: string; async?: boolean }[] }[]
>;

/** lifeline's hooks as a fresh `hooks` object, for a binary invoked as `binary`. */
export function lifelineHooks(binary: string): LifelineHooks {
  const hooks: LifelineHooks = {};
  for (const want of RECOMMENDED_HOOKS) {
    const groups = (hooks[want.event] ??= []);
    const handler = {
      type: "command" as const,
      command: `${binary} hook ${want.hook}`,
      ...(want.async ? { async: true } : {}),
    };
    const group = groups.find((g) => (g.matcher ?? "") === (want.matcher ?? ""));
    if (group) group.hooks.push(handler);
    else groups.push({ ...(want.matcher ? { matcher: want.matcher } : {}), hooks: [handler] });
  }
  return hooks;
}

/** One command hook handler. */
export interface CommandHook {
  type: "command";
  command: string;
  async?: boolean;
  timeout?: number;
  [key: string]: unknown;
}

/** One matcher group of an event. */
export interface MatcherGroup {
  matcher?: string;
  hooks: CommandHook[];
  [key: string]: unknown;
}

/** The lifeline hooks, by event: which subcommand, and how it runs. */
export const RECOMMENDED_HOOKS: readonly {
  event: string;
  hook: HookName;
  matcher?: string;
  async?: true;
}[] = [
  { event: "SessionStart", hook: "crash" },
  { event: "UserPromptSubmit", hook: "remind" },
  { event: "PostToolUse", hook: "heartbeat", matcher: "*", async: true },
  { event: "PostToolUse", hook: "track", matcher: "*" },
  { event: "PostToolUseFailure", hook: "track", matcher: "*" },
  { event: "StopFailure", hook: "track" },
  { event: "Stop", hook: "track" },
  // A session the user quits is ended, not dead: never scavenged, never revived. Not async: the
  // client is exiting, and a hook left running in the background may be killed before it writes.
  { event: "SessionEnd", hook: "heartbeat" },
];

/** A lifeline hook command, whatever path it calls the binary by: `… hook <name>`. */
const LIFELINE_HOOK = new RegExp(
  String.raw`(?:^|[\s/\\"'])lifeline(?:\.exe)?["']?\s+hook\s+(${HOOK_NAMES.join("|")})\b|` +
    String.raw`main\.ts["']?\s+hook\s+(${HOOK_NAMES.join("|")})\b`,
);

/** The lifeline hook a command runs, or null. */
export function lifelineHookOf(command: string): string | null {
  const match = LIFELINE_HOOK.exec(command);
  return match ? (match[1] ?? match[2] ?? null) : null;
}

/** What a merge changed. */
export interface MergeResult {
  settings: Record<string, unknown>;
  added: string[];
  updated: string[];
  unchanged: string[];
}

/**
 * The word of a lifeline hook command that names the program (`/opt/bin/lifeline`,
 * `"C:\\…\\lifeline.exe"`, `…/main.ts`), where it stands in the command, and the path it names.
 */
const PROGRAM_WORD =
  /(?<=^|[\s;&|(=])(["']?)((?:[^\s"';&|()]*[/\\])?(?:lifeline(?:\.exe)?|main\.ts))\1(?=\s+hook\s)/;

/**
 * `command` with its lifeline program replaced by `binary`, when it names one by a path that
 * `missing` says is gone (an old install, a moved checkout); null when it is to stay as written.
 * Only that word changes: wrappers, flags, environment and redirections stay the user's. A
 * checkout's `main.ts` that is gone is replaced with the `deno` word before it when `binary` is
 * not a checkout's.
 */
function repointed(command: string, binary: string, missing: (path: string) => boolean) {
  const match = PROGRAM_WORD.exec(command);
  const path = match?.[2];
  if (!match || !path || !/[/\\]/.test(path) || !missing(path)) return null;
  let start = match.index;
  const end = match.index + match[0].length;
  if (path.endsWith("main.ts")) {
    if (binary.endsWith("main.ts")) {
      // Both run from source: the new checkout's main.ts, the user's deno and flags.
      return command.slice(0, start) + binary.split(/\s+/).at(-1)! + command.slice(end);
    }
    const deno = /(?:^|\s)(["']?)[^\s"']*deno(?:\.exe)?\1\s[^]*$/.exec(command.slice(0, start));
    if (!deno) return null;
    start = deno.index + (deno[0].startsWith(" ") ? 1 : 0);
  }
  return command.slice(0, start) + binary + command.slice(end);
}

/**
 * Merges lifeline's hooks into `settings`: a missing one is added; one that already runs the same
 * lifeline hook for the event is left as the user wrote it (wrappers, flags, `async`, timeouts),
 * except that a lifeline path `missing` says no longer exists is replaced by `binary`, in place;
 * every other key, hook and entry is kept as it was. Throws on an event that is not a list (check
 * {@linkcode misshapenEvents} first): replacing it would drop what it holds.
 */
export function mergeHooks(
  settings: Record<string, unknown>,
  binary: string,
  { missing = () => false }: { missing?: (path: string) => boolean } = {},
): MergeResult {
  const result = structuredClone(settings);
  const hooks =
    (result.hooks && typeof result.hooks === "object" && !Array.isArray(result.hooks)
      ? result.hooks
      : (result.hooks = {})) as Record<string, unknown>;
  const added: string[] = [];
  const updated: string[] = [];
  const unchanged: string[] = [];
  for (const [event, wanted] of Object.entries(lifelineHooks(binary))) {
    hooks[event] ??= [];
    if (!Array.isArray(hooks[event])) throw new Error(`hooks.${event} is not a list`);
    const list = hooks[event] as MatcherGroup[];
    for (const { matcher, hooks: handlers } of wanted) {
      for (const handler of handlers) {
        const hook = lifelineHookOf(handler.command);
        const label = `${event}: lifeline hook ${hook}`;
        const existing = matcherGroups(list).flatMap(commandsOf)
          .find((h) => lifelineHookOf(h.command) === hook);
        if (existing) {
          const command = repointed(existing.command, binary, missing);
          if (command !== null) existing.command = command;
          (command === null ? unchanged : updated).push(label);
          continue;
        }
        // Beside the event's other lifeline hooks when they share the matcher.
        const group = matcherGroups(list).find((g) =>
          (g.matcher ?? "") === (matcher ?? "") &&
          commandsOf(g).some((h) => lifelineHookOf(h.command) !== null)
        );
        if (group) group.hooks.push({ ...handler });
        else list.push({ ...(matcher ? { matcher } : {}), hooks: [{ ...handler }] });
        added.push(label);
      }
    }
  }
  return { settings: result, added, updated, unchanged };
}

/** What a removal took out: the settings without lifeline's hooks, and a label per hook. */
export interface RemoveResult {
  settings: Record<string, unknown>;
  removed: string[];
}

/**
 * Takes lifeline's hooks out of `settings`, and nothing else: a matcher group, an event, or the
 * `hooks` object is dropped only when removing lifeline's entries emptied it (an empty one the
 * user wrote stays). The inverse of {@linkcode mergeHooks}.
 */
export function removeHooks(settings: Record<string, unknown>): RemoveResult {
  const result = structuredClone(settings);
  const removed: string[] = [];
  const hooks = result.hooks as Record<string, unknown>;
  for (const [event, list] of eventLists(result)) {
    if (!Array.isArray(list)) continue;
    const kept = list.filter((group) => {
      const [g] = matcherGroups([group]);
      if (!g) return true;
      const before = g.hooks.length;
      g.hooks = g.hooks.filter((h) => {
        const hook = isCommand(h) ? lifelineHookOf(h.command) : null;
        if (hook !== null) removed.push(`${event}: lifeline hook ${hook}`);
        return hook === null;
      });
      return g.hooks.length > 0 || g.hooks.length === before;
    });
    if (kept.length > 0 || list.length === 0) hooks[event] = kept;
    else delete hooks[event];
  }
  if (removed.length > 0 && hooks && Object.keys(hooks).length === 0) delete result.hooks;
  return { settings: result, removed };
}

/** Each event's list of matcher groups, as found (not yet checked). */
function eventLists(settings: Record<string, unknown>): [string, unknown][] {
  const hooks = settings.hooks;
  return hooks && typeof hooks === "object" && !Array.isArray(hooks) ? Object.entries(hooks) : [];
}

/** The groups of an event's list that have a `hooks` array (the objects themselves). */
function matcherGroups(list: unknown): MatcherGroup[] {
  if (!Array.isArray(list)) return [];
  return (list as MatcherGroup[]).filter((g) =>
    g !== null && typeof g === "object" && Array.isArray(g.hooks)
  );
}

function isCommand(hook: CommandHook | null | undefined): hook is CommandHook {
  return hook?.type === "command" && typeof hook.command === "string";
}

/** A group's command hooks (the objects themselves). */
function commandsOf(group: MatcherGroup): CommandHook[] {
  return group.hooks.filter(isCommand);
}

/** Every command hook in a settings object, with where it is. */
export function commandHooks(settings: Record<string, unknown>): {
  event: string;
  matcher: string | undefined;
  command: string;
}[] {
  return eventLists(settings).flatMap(([event, list]) =>
    matcherGroups(list).flatMap((group) =>
      commandsOf(group).map((hook) => ({
        event,
        matcher: typeof group.matcher === "string" ? group.matcher : undefined,
        command: hook.command,
      }))
    )
  );
}

/** Every matcher in a settings object. */
export function matchers(settings: Record<string, unknown>): { event: string; matcher: string }[] {
  return eventLists(settings).flatMap(([event, list]) =>
    matcherGroups(list).flatMap((group) =>
      typeof group.matcher === "string" ? [{ event, matcher: group.matcher }] : []
    )
  );
}

/**
 * What is wrong with a matcher (reference §3), or null. `*`, empty, and plain names separated by
 * `|` are exact; anything else is a JavaScript regex, so `mcp__memory` matches nothing.
 */
export function matcherProblem(
  matcher: string,
): { level: "fail" | "warn"; message: string } | null {
  if (/^mcp__[A-Za-z0-9_-]+$/.test(matcher) && !matcher.slice("mcp__".length).includes("__")) {
    return {
      level: "warn",
      message:
        `"${matcher}" matches no tool; MCP tools are mcp__<server>__<tool>: use "${matcher}__.*"`,
    };
  }
  if (matcher === "" || matcher === "*" || /^[A-Za-z0-9_|]+$/.test(matcher)) return null;
  try {
    new RegExp(matcher);
  } catch (error) {
    return {
      level: "fail",
      message: `"${matcher}" is not a valid regex: ${(error as Error).message}`,
    };
  }
  return null;
}

/**
 * Whether the user's Claude Code edits its prompt vim-style: `editorMode` is `"vim"` in their
 * settings (`~/.claude/settings.json`) or their global config (`~/.claude.json`, or
 * `$CLAUDE_CONFIG_DIR/.claude.json`). Files that cannot be read say nothing.
 */
export async function editsVimStyle(env: Readonly<Record<string, string>>): Promise<boolean> {
  const dir = claudeConfigDir(env);
  const files = [
    joinPath(dir, "settings.json"),
    env.CLAUDE_CONFIG_DIR ? joinPath(dir, ".claude.json") : joinPath(dirName(dir), ".claude.json"),
  ];
  for (const path of files) {
    try {
      const text = await readStateText(path, { root: dirName(path), maxBytes: 4 << 20 });
      const parsed = parseJsonText(text);
      const value = parsed.ok ? parsed.value as { editorMode?: unknown } | null : null;
      if (value?.editorMode === "vim") return true;
    } catch {
      // missing or unreadable: it says nothing
    }
  }
  return false;
}
