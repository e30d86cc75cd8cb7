/**
 * Claude Code's settings files (reference §3): where they are, reading them with the line and
 * column of a syntax error, and merging lifeline's hooks into them without disturbing anything
 * else. The merge is a pure function.
 *
 * @module
 */

import { parseJsonText } from "./json_text.ts";
import { claudeConfigDir, joinPath } from "./paths.ts";

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
  | { kind: "invalid"; text: string; line: number; column: number; reason: string };

/** Reads and parses a settings file; a syntax error carries its line and column. */
export async function readSettings(path: string): Promise<SettingsRead> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kind: "missing" };
    throw error;
  }
  if (text.trim() === "") return { kind: "ok", text, value: {} };
  const parsed = parseJsonText(text);
  if (!parsed.ok) return { kind: "invalid", text, ...parsed.error };
  if (!parsed.value || typeof parsed.value !== "object" || Array.isArray(parsed.value)) {
    return { kind: "invalid", text, line: 1, column: 1, reason: "the file is not a JSON object" };
  }
  return { kind: "ok", text, value: parsed.value as Record<string, unknown> };
}

/**
 * The hooks lifeline adds, in the exact shape of the client's settings type (`Settings["hooks"]`
 * in the SDK; tests/settings_types_test.ts checks it).
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
  hook: "crash" | "track" | "heartbeat" | "remind";
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
];

/** A lifeline hook command, whatever path it calls the binary by: `… hook <name>`. */
const LIFELINE_HOOK =
  /(?:^|[\s/\\"'])lifeline(?:\.exe)?["']?\s+hook\s+(crash|track|heartbeat|remind)\b|main\.ts["']?\s+hook\s+(crash|track|heartbeat|remind)\b/;

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
 * Merges lifeline's hooks into `settings`: an existing lifeline entry for the same event and
 * hook is updated in place (whatever binary path it used), a missing one is added, and every
 * other key, hook and entry is kept as it was.
 */
export function mergeHooks(settings: Record<string, unknown>, binary: string): MergeResult {
  const result = structuredClone(settings);
  const hooks =
    (result.hooks && typeof result.hooks === "object" && !Array.isArray(result.hooks)
      ? result.hooks
      : (result.hooks = {})) as Record<string, unknown>;
  const added: string[] = [];
  const updated: string[] = [];
  const unchanged: string[] = [];
  for (const want of RECOMMENDED_HOOKS) {
    const label = `${want.event}: lifeline hook ${want.hook}`;
    const command = `${binary} hook ${want.hook}`;
    const groups = (Array.isArray(hooks[want.event])
      ? hooks[want.event]
      : (hooks[want.event] = [])) as MatcherGroup[];
    let found: CommandHook | undefined;
    for (const group of groups) {
      if (!group || !Array.isArray(group.hooks)) {
        continue;
      }
      found = group.hooks.find((h) =>
        h && h.type === "command" && typeof h.command === "string" &&
        lifelineHookOf(h.command) === want.hook
      );
      if (found) {
        break;
      }
    }
    if (found) {
      const before = JSON.stringify(found);
      found.command = command;
      if (want.async) {
        found.async = true;
      }
      (JSON.stringify(found) === before ? unchanged : updated).push(label);
      continue;
    }
    const handler: CommandHook = {
      type: "command",
      command,
      ...(want.async ? { async: true } : {}),
    };
    const group = groups.find((g) =>
      g && Array.isArray(g.hooks) && (g.matcher ?? "") === (want.matcher ?? "") &&
      g.hooks.some((h) =>
        h && typeof h.command === "string" && lifelineHookOf(h.command) !== null
      )
    );
    if (group) group.hooks.push(handler);
    else groups.push({ ...(want.matcher ? { matcher: want.matcher } : {}), hooks: [handler] });
    added.push(label);
  }
  return { settings: result, added, updated, unchanged };
}

/** Every command hook in a settings object, with where it is. */
export function commandHooks(settings: Record<string, unknown>): {
  event: string;
  matcher: string | undefined;
  command: string;
}[] {
  const out: { event: string; matcher: string | undefined; command: string }[] = [];
  const hooks = settings.hooks;
  if (!hooks || typeof hooks !== "object") return out;
  for (const [event, groups] of Object.entries(hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) continue;
    for (const group of groups as MatcherGroup[]) {
      if (!group || !Array.isArray(group.hooks)) continue;
      for (const hook of group.hooks) {
        if (hook?.type === "command" && typeof hook.command === "string") {
          out.push({
            event,
            matcher: typeof group.matcher === "string" ? group.matcher : undefined,
            command: hook.command,
          });
        }
      }
    }
  }
  return out;
}

/** Every matcher in a settings object. */
export function matchers(settings: Record<string, unknown>): { event: string; matcher: string }[] {
  const out: { event: string; matcher: string }[] = [];
  const hooks = settings.hooks;
  if (!hooks || typeof hooks !== "object") return out;
  for (const [event, groups] of Object.entries(hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) continue;
    for (const group of groups as MatcherGroup[]) {
      if (group && typeof group.matcher === "string") out.push({ event, matcher: group.matcher });
    }
  }
  return out;
}

/**
 * What is wrong with a matcher (reference §3), or null. `*`, empty, and plain names separated by
 * `|` are exact; anything else is a JavaScript regex, so `mcp__memory` matches nothing.
 */
export function matcherProblem(
  matcher: string,
): { level: "fail" | "warn"; message: string } | null {
  if (matcher === "" || matcher === "*" || /^[A-Za-z0-9_|]+$/.test(matcher)) {
    if (/^mcp__[A-Za-z0-9_-]+$/.test(matcher) && !matcher.slice(5).includes("__")) {
      return {
        level: "warn",
        message:
          `"${matcher}" matches no tool; MCP tools are mcp__<server>__<tool>: use "${matcher}__.*"`,
      };
    }
    return null;
  }
  try {
    new RegExp(matcher);
  } catch (error) {
    return {
      level: "fail",
      message: `"${matcher}" is not a valid regex: ${(error as Error).message}`,
    };
  }
  if (/^mcp__[A-Za-z0-9_-]+$/.test(matcher)) {
    return { level: "warn", message: `"${matcher}" matches no tool; use "${matcher}__.*"` };
  }
  return null;
}
