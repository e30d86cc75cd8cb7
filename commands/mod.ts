/**
 * The command table: every command with its summary, the help texts, and the dispatch of every
 * command line but a hook's (see `dispatch.ts`). Each command's module is loaded with `import()`
 * only when that command runs.
 *
 * @module
 */

import { type CommandModule, type Context, EXIT } from "../lib/core/cli.ts";
import { importLater } from "../lib/core/lazy.ts";
import { loadCommand, loadHook, reportError, runCommand } from "./dispatch.ts";
import type * as Suggest from "../lib/core/suggest.ts";
import { HOOK_NAMES, type HookName } from "../lib/claude/hook_names.ts";

/** `watch_pause.ts` holds two commands. */
type WatchPause = Record<"pause" | "resume", CommandModule>;
/** `service.ts` holds three. */
type Service = Record<"install" | "uninstall" | "status", CommandModule>;

/** One row of the command table. */
export interface CommandEntry {
  /** One or two words, e.g. `hook track`. */
  name: string;
  summary: string;
  load(): Promise<CommandModule>;
}

/**
 * The hook commands, one per name in {@linkcode HOOK_NAMES} (the type makes a missing one an
 * error).
 */
const HOOKS: Record<HookName, Omit<CommandEntry, "name">> = {
  crash: {
    summary: "SessionStart hook: repairs state a crashed session left, and says what it found",
    load: () => loadHook("crash"),
  },
  track: {
    summary: "Tool and API failure hook: MCP backoff, tool fallback, model fallback advice",
    load: () => loadHook("track"),
  },
  remind: {
    summary: "UserPromptSubmit hook: self-heal reminder, plus pending lifeline advice",
    load: () => loadHook("remind"),
  },
  heartbeat: {
    summary: "PostToolUse hook (async): heartbeat and session registry for the watchers",
    load: () => loadHook("heartbeat"),
  },
};

/** Every command, in the order `lifeline --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "init",
    summary:
      "Add lifeline's hooks to a Claude Code settings file (idempotent, backed up); --remove",
    load: () => loadCommand("init.ts"),
  },
  {
    name: "doctor",
    summary: "Check the setup: settings, hooks, matchers, binary, tmux, state, git, watchers",
    load: () => loadCommand("doctor.ts"),
  },
  {
    name: "status",
    summary: "Show sessions, watched panes, breakers, failing tools and pending advice",
    load: () => loadCommand("status.ts"),
  },
  ...HOOK_NAMES.map((hook) => ({ name: `hook ${hook}`, ...HOOKS[hook] })),
  {
    name: "watch tmux",
    summary: "Resume agents in tmux after a rate limit resets; never type into a prompt",
    load: () => loadCommand("watch_tmux.ts"),
  },
  {
    name: "watch pause",
    summary: "Keep the watcher's hands off a pane (or its window): tmux option @lifeline off",
    load: async () => (await loadCommand<WatchPause>("watch_pause.ts")).pause,
  },
  {
    name: "watch resume",
    summary: "Let the watcher look after a paused pane again",
    load: async () => (await loadCommand<WatchPause>("watch_pause.ts")).resume,
  },

  {
    name: "daemon stale",
    summary: "Find silently dead sessions, rescue their findings, revive them (--revive)",
    load: () => loadCommand("daemon_stale.ts"),
  },
  {
    name: "service install",
    summary: "Run the watcher and the daemon as services (systemd user units, launchd agents)",
    load: async () => (await loadCommand<Service>("service.ts")).install,
  },
  {
    name: "service uninstall",
    summary: "Stop and remove the services `service install` wrote",
    load: async () => (await loadCommand<Service>("service.ts")).uninstall,
  },
  {
    name: "service status",
    summary: "Show whether the services are installed, up to date and running",
    load: async () => (await loadCommand<Service>("service.ts")).status,
  },
  {
    name: "logs",
    summary: "Show what the watcher and the daemon did, newest last (--follow, --since 1h)",
    load: () => loadCommand("logs.ts"),
  },
  {
    name: "fail init",
    summary: "Create the loop harness (.EnjoyHarness/, .trace/) that fail handle works on",
    load: () => loadCommand("fail_init.ts"),
  },
  {
    name: "fail handle",
    summary: "Handle a loop failure: classify, record, count, roll back safely, decide, break",
    load: () => loadCommand("fail_handle.ts"),
  },
  {
    name: "fail restore",
    summary: "Put back exactly what a rollback saved under refs/lifeline/backups/",
    load: () => loadCommand("fail_restore.ts"),
  },
  {
    name: "fail list",
    summary: "List the rollback backups: task, time, size, what they hold",
    load: () => loadCommand("fail_list.ts"),
  },
  {
    name: "fail prune",
    summary: "Delete old rollback backups (--keep N or --older-than 30d)",
    load: () => loadCommand("fail_prune.ts"),
  },
  {
    name: "fail reset",
    summary: "Close a task's breaker and clear its counts, or reset the iteration budget",
    load: () => loadCommand("fail_reset.ts"),
  },
  {
    name: "selfheal",
    summary: "Turn the self-heal reminder on or off (the kill switch), or show its state",
    load: () => loadCommand("selfheal.ts"),
  },
  {
    name: "uninstall",
    summary: "Take lifeline out: its hooks, its services; lists the state it leaves",
    load: () => loadCommand("uninstall.ts"),
  },
  {
    name: "forget",
    summary: "Remove an ended session's state from the project (test sessions, old ones)",
    load: () => loadCommand("forget.ts"),
  },
];

/** Groups that have subcommands, e.g. `hook`. */
function groups(): Set<string> {
  return new Set(COMMANDS.filter((c) => c.name.includes(" ")).map((c) => c.name.split(" ")[0]!));
}

/** A group's commands, e.g. `hook crash`, `hook track`, … */
function groupCommands(group: string): CommandEntry[] {
  return COMMANDS.filter((c) => c.name.startsWith(group + " "));
}

/** `Usage: lifeline hook <crash|track|…>`. */
function groupUsage(group: string): string {
  return `Usage: lifeline ${group} <${
    groupCommands(group).map((c) => c.name.split(" ")[1]).join("|")
  }>`;
}

/** Finds the command named by the leading arguments. */
export function findCommand(
  args: readonly string[],
): { entry: CommandEntry; rest: string[] } | undefined {
  for (const words of [2, 1]) {
    const name = args.slice(0, words).join(" ");
    const entry = COMMANDS.find((c) => c.name === name);
    if (entry && args.length >= words) return { entry, rest: args.slice(words) };
  }
  return undefined;
}

/** The text of `lifeline --help`. */
export function mainHelp(version: string): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    `Usage: lifeline <command> [options]`,
    "",
    `lifeline ${version}: keeps long-running coding-agent sessions alive and safe.`,
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Options:",
    "  -h, --help     show help (also after a command)",
    "  -V, --version  print the version (also -v, or `lifeline version`)",
    "",
    "Run `lifeline <command> --help`, or `lifeline help <command>`, for a command's options.",
  ].join("\n");
}

function groupHelp(group: string): string {
  const commands = groupCommands(group);
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    groupUsage(group),
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    `Run \`lifeline help ${group} <command>\` for a command's options.`,
  ].join("\n");
}

/** What is wrong with a command line that names no command: the message and the usage line. */
async function unknownCommand(words: readonly string[]): Promise<{ error: string; usage: string }> {
  const [first = "", sub] = words;
  // Loaded here: a mistyped command line is the only one that needs it.
  const { closest } = await importLater<typeof Suggest>("../lib/core/suggest.ts", import.meta.url);
  if (groups().has(first)) {
    const subs = groupCommands(first).map((c) => c.name.split(" ")[1]!);
    if (sub === undefined || sub.startsWith("-")) {
      return { error: `missing ${first} command`, usage: groupUsage(first) };
    }
    const match = closest(sub, subs);
    return {
      error: `unknown command "${first} ${sub}" ` +
        (match ? `(did you mean "${first} ${match}"?)` : `(try: ${subs.join(", ")})`),
      usage: groupUsage(first),
    };
  }
  const match = closest(first, [...new Set(COMMANDS.map((c) => c.name.split(" ")[0]!)), "help"]);
  return {
    error: `unknown command "${first}" ` +
      (match ? `(did you mean "${match}"?)` : "(run `lifeline --help` for the list)"),
    usage: "Usage: lifeline <command> [options]",
  };
}

/** `lifeline help [command]`. */
async function printHelp(ctx: Context, words: readonly string[], version: string) {
  const found = findCommand(words);
  if (found && found.rest.length === 0) {
    ctx.out.line((await found.entry.load()).help);
    return EXIT.ok;
  }
  if (words.length === 1 && groups().has(words[0]!)) {
    ctx.out.line(groupHelp(words[0]!));
    return EXIT.ok;
  }
  if (words.length === 0) {
    ctx.out.line(mainHelp(version));
    return EXIT.ok;
  }
  return reportError(ctx, { ...await unknownCommand(words), exitCode: EXIT.usage });
}

/**
 * Runs the command line (the dispatcher's part for everything but a hook, see `dispatch.ts`):
 * version and help, the command the leading words name, or an error saying what is wrong.
 */
export async function dispatch(ctx: Context, version: string): Promise<number> {
  const args = ctx.args;
  const first = args[0];
  if (["--version", "-V", "-v", "version"].includes(first ?? "")) {
    ctx.out.line(`lifeline ${version}`);
    return EXIT.ok;
  }
  if (first === "help") return await printHelp(ctx, args.slice(1), version);
  if (first === undefined || first === "--help" || first === "-h") {
    const help = mainHelp(version);
    if (first === undefined) {
      ctx.out.error(help);
      ctx.out.error("\nerror: missing command");
      return EXIT.usage;
    }
    ctx.out.line(help);
    return EXIT.ok;
  }
  const found = findCommand(args);
  if (!found) {
    const unknown = await unknownCommand(args);
    // DESIGN §5: an unknown hook name is exit 1 with one line, so a typo in settings.json shows
    // up as a non-blocking error and the agent goes on.
    if (first === "hook" && args[1] !== undefined && !args[1].startsWith("-")) {
      return reportError(ctx, { error: unknown.error, exitCode: EXIT.error });
    }
    return reportError(ctx, { ...unknown, exitCode: EXIT.usage });
  }
  return await runCommand(ctx, found.entry, { rest: found.rest });
}
