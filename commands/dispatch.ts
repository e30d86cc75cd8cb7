/**
 * The dispatcher: runs the command `ctx.args` names, and turns what it throws into an exit code. A
 * hook (`lifeline hook <name>`, on every tool call) is run straight away; every other command line
 * is looked up in the command table (`mod.ts`), which is loaded for it, so that a hook never loads
 * the table (~1 ms of `deno run`'s start-up).
 *
 * The command modules are imported by computed specifiers (`importLater`): with `import("…")`
 * literals, `deno run` would read the graph of every command before running one, most of lifeline
 * (~100 files, ~3 ms on every hook call). `deno compile --include commands` bundles them.
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
import { StdoutClosedError } from "../lib/core/output.ts";
import { importLater } from "../lib/core/lazy.ts";
import { HOOK_NAMES, type HookName } from "../lib/claude/hook_names.ts";
import type * as CommandTable from "./mod.ts";

/** Loads `commands/<file>`. */
export function loadCommand<T = CommandModule>(file: string): Promise<T> {
  return importLater<T>(`./${file}`, import.meta.url);
}

/** Loads the module of `lifeline hook <name>`. */
export function loadHook(name: HookName): Promise<CommandModule> {
  return loadCommand(`hook_${name}.ts`);
}

/** The arguments before a `--`. */
function flagWords(args: readonly string[]): readonly string[] {
  const end = args.indexOf("--");
  return end < 0 ? args : args.slice(0, end);
}

function helpRequested(args: readonly string[]): boolean {
  const flags = flagWords(args);
  return flags.includes("--help") || flags.includes("-h");
}

/** An error as the user sees it: the message, and the usage line or a hint when there is one. */
export interface ErrorReport {
  error: string;
  usage?: string;
  hint?: string;
  stack?: string;
  exitCode: number;
}

/**
 * Prints an error on stderr and returns its exit code: text lines, or, when the command line asks
 * for `--json`, one JSON object (`{"error", "usage"?, "hint"?, "exit_code"}`), so that a script
 * reading JSON gets JSON either way.
 */
export function reportError(ctx: Context, report: ErrorReport): number {
  if (flagWords(ctx.args).includes("--json")) {
    const { exitCode, ...fields } = report;
    ctx.out.error(JSON.stringify({ ...fields, exit_code: exitCode }));
  } else {
    if (report.usage) ctx.out.error(report.usage);
    ctx.out.error(report.stack ? report.error : `error: ${report.error}`);
    if (report.hint) ctx.out.error(`hint: ${report.hint}`);
    if (report.stack) ctx.out.error(report.stack);
  }
  return report.exitCode;
}

/**
 * Runs the command named by `ctx.args` and returns the process exit code: 0, 1, 10 or 64, never 2.
 * Usage errors print the usage line and `error: …`; domain errors print the message and a hint;
 * anything unexpected is a bug and prints its stack. With `--json`, each is one JSON object. A
 * stdout closed by its reader (`lifeline status | head -1`) ends the command quietly, with 0.
 */
export async function runCli(ctx: Context, version: string): Promise<number> {
  try {
    const [group, name] = ctx.args;
    if (group === "hook" && (HOOK_NAMES as readonly (string | undefined)[]).includes(name)) {
      const hook = name as HookName;
      return await runCommand(ctx, { name: `hook ${hook}`, load: () => loadHook(hook) }, {
        rest: ctx.args.slice(2),
      });
    }
    const table = await importLater<typeof CommandTable>("./mod.ts", import.meta.url);
    return await table.dispatch(ctx, version);
  } catch (error) {
    if (error instanceof StdoutClosedError) return EXIT.ok;
    throw error;
  }
}

/** Loads a command and runs it on `rest`, its arguments (or prints its help). */
export async function runCommand(
  ctx: Context,
  entry: { name: string; load(): Promise<CommandModule> },
  { rest }: { rest: string[] },
): Promise<number> {
  const command = await entry.load();
  if (helpRequested(rest)) {
    ctx.out.line(command.help);
    return EXIT.ok;
  }
  try {
    return await command.run({ ...ctx, args: rest });
  } catch (error) {
    if (error instanceof StdoutClosedError) throw error;
    if (error instanceof UsageError) {
      return reportError(ctx, {
        error: error.message,
        usage: usageLine(command.help),
        exitCode: EXIT.usage,
      });
    }
    if (error instanceof CliError) {
      return reportError(ctx, {
        error: error.message,
        ...(error.hint ? { hint: error.hint } : {}),
        exitCode: EXIT.error,
      });
    }
    // A bug: say so with the stack, but still never exit 2.
    return reportError(ctx, {
      error: `lifeline: internal error in "${entry.name}"`,
      stack: error instanceof Error ? (error.stack ?? error.message) : String(error),
      exitCode: EXIT.error,
    });
  }
}
