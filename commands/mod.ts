/**
 * The command table and the dispatcher. Each command's module is loaded with `import()` only when
 * that command runs, so a hook loads its own modules and nothing else.
 *
 * @module
 */

import {
  CliError,
  type CommandModule,
  type Context,
  EXIT,
  UsageError,
  usageLine,
} from "../lib/core/cli.ts";
import { HOOK_NAMES, type HookName } from "../lib/claude/hook_names.ts";

/** One row of the command table. */
export interface CommandEntry {
  /** One or two words, e.g. `hook track`. */
  name: string;
  summary: string;
  load(): Promise<CommandModule>;
}

/**
 * The hook commands, one per name in {@linkcode HOOK_NAMES} (the type makes a missing one an
 * error). Each `import()` names its file literally, so `deno compile` bundles it.
 */
const HOOKS: Record<HookName, Omit<CommandEntry, "name">> = {
  crash: {
    summary: "SessionStart hook: repairs state a crashed session left, and says what it found",
    load: () => import("./hook_crash.ts"),
  },
  track: {
    summary: "Tool and API failure hook: MCP backoff, tool fallback, model fallback advice",
    load: () => import("./hook_track.ts"),
  },
  remind: {
    summary: "UserPromptSubmit hook: self-heal reminder, plus pending lifeline advice",
    load: () => import("./hook_remind.ts"),
  },
  heartbeat: {
    summary: "PostToolUse hook (async): heartbeat and session registry for the watchers",
    load: () => import("./hook_heartbeat.ts"),
  },
};

/** Every command, in the order `lifeline --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "init",
    summary: "Add lifeline's hooks to a Claude Code settings file (idempotent, backed up)",
    load: () => import("./init.ts"),
  },
  {
    name: "doctor",
    summary: "Check the setup: settings, hooks, matchers, binary, tmux, state, watchers",
    load: () => import("./doctor.ts"),
  },
  {
    name: "status",
    summary: "Show sessions, watched panes, breakers, failing tools and pending advice",
    load: () => import("./status.ts"),
  },
  ...HOOK_NAMES.map((hook) => ({ name: `hook ${hook}`, ...HOOKS[hook] })),
  {
    name: "watch tmux",
    summary: "Resume agents in tmux after a rate limit resets; never type into a prompt",
    load: () => import("./watch_tmux.ts"),
  },
  {
    name: "daemon stale",
    summary: "Find silently dead sessions and rescue their findings into a handoff",
    load: () => import("./daemon_stale.ts"),
  },
  {
    name: "fail init",
    summary: "Create the loop harness (.EnjoyHarness/, .trace/) that fail handle works on",
    load: () => import("./fail_init.ts"),
  },
  {
    name: "fail handle",
    summary: "Handle a loop failure: classify, record, count, roll back safely, decide, break",
    load: () => import("./fail_handle.ts"),
  },
  {
    name: "fail restore",
    summary: "Put back exactly what a rollback saved under refs/lifeline/backups/",
    load: () => import("./fail_restore.ts"),
  },
  {
    name: "fail list",
    summary: "List the rollback backups: task, time, size, what they hold",
    load: () => import("./fail_list.ts"),
  },
  {
    name: "fail prune",
    summary: "Delete old rollback backups (--keep N or --older-than 30d)",
    load: () => import("./fail_prune.ts"),
  },
  {
    name: "fail reset",
    summary: "Close a task's breaker and clear its counts, or reset the iteration budget",
    load: () => import("./fail_reset.ts"),
  },
  {
    name: "selfheal",
    summary: "Turn the self-heal reminder on or off (the kill switch), or show its state",
    load: () => import("./selfheal.ts"),
  },
];

/** Groups that have subcommands, e.g. `hook`. */
function groups(): Set<string> {
  return new Set(COMMANDS.filter((c) => c.name.includes(" ")).map((c) => c.name.split(" ")[0]!));
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
    "  -V, --version  print the version",
    "",
    "Run `lifeline <command> --help` for a command's options.",
  ].join("\n");
}

function helpRequested(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  const flags = end < 0 ? args : args.slice(0, end);
  return flags.includes("--help") || flags.includes("-h");
}

/**
 * Runs the command named by `ctx.args` and returns the process exit code: 0, 1, 10 or 64, never 2.
 * Usage errors print the usage line and `error: …`; domain errors print the message and a hint;
 * anything unexpected is a bug and prints its stack.
 */
export async function runCli(ctx: Context, version: string): Promise<number> {
  const args = ctx.args;
  const first = args[0];
  if (first === "--version" || first === "-V") {
    ctx.out.line(`lifeline ${version}`);
    return EXIT.ok;
  }
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
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
    if (groups().has(first)) {
      const names = COMMANDS.filter((c) => c.name.startsWith(first + " ")).map((c) => c.name);
      const sub = args[1];
      if (sub !== undefined && !sub.startsWith("-")) {
        // DESIGN §5: an unknown hook name is exit 1 with one line, so a typo in settings.json
        // shows up as a non-blocking error and the agent goes on.
        ctx.out.error(`error: unknown command "${first} ${sub}" (try: ${names.join(", ")})`);
        return EXIT.error;
      }
      ctx.out.error(`Usage: lifeline ${first} <${names.map((n) => n.split(" ")[1]).join("|")}>`);
      ctx.out.error(`error: missing ${first} command`);
      return EXIT.usage;
    }
    ctx.out.error("Usage: lifeline <command> [options]");
    ctx.out.error(`error: unknown command "${first}" (run \`lifeline --help\` for the list)`);
    return EXIT.usage;
  }
  const command = await found.entry.load();
  if (helpRequested(found.rest)) {
    ctx.out.line(command.help);
    return EXIT.ok;
  }
  try {
    return await command.run({ ...ctx, args: found.rest });
  } catch (error) {
    if (error instanceof UsageError) {
      ctx.out.error(usageLine(command.help));
      ctx.out.error(`error: ${error.message}`);
      return EXIT.usage;
    }
    if (error instanceof CliError) {
      ctx.out.error(`error: ${error.message}`);
      if (error.hint) ctx.out.error(`hint: ${error.hint}`);
      return EXIT.error;
    }
    // A bug: say so with the stack, but still never exit 2.
    ctx.out.error(`lifeline: internal error in "${found.entry.name}"`);
    ctx.out.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    return EXIT.error;
  }
}
