/**
 * The contract between `main.ts` and the commands: what a command receives, what it returns, and
 * the two error kinds that become exit codes.
 *
 * @module
 */

import type { Output } from "./output.ts";
import { absolutePath } from "./path.ts";

/** Exit codes. 2 is deliberately absent: Claude Code reads exit 2 from a hook as "block". */
export const EXIT = {
  ok: 0,
  /** A domain error: one line and a hint on stderr. */
  error: 1,
  /** `fail handle`: stop the loop and escalate. */
  escalate: 10,
  /** A usage error: the usage line and `error: …` on stderr. */
  usage: 64,
} as const;

/** Everything a command may touch. `main.ts` builds it from the real process. */
export interface Context {
  /** Arguments after the command name. */
  args: readonly string[];
  /** A snapshot of the environment. */
  env: Readonly<Record<string, string>>;
  /** The working directory the command was started in. */
  cwd: string;
  /** This process's id and its parent's (a hook's parent is the agent, or the shell it used). */
  pid: number;
  ppid: number;
  /** Standard input, read with plain reads (web streams cost ~5 ms to start; hooks avoid them). */
  stdin: StdinReader;
  out: Output;
  /** Milliseconds since the epoch. */
  now(): number;
  /** A random number in [0, 1) (jitter, temp names). */
  random(): number;
  /**
   * The local time zone (IANA name), for times that name none. A function: asking costs ~12 ms of
   * ICU start-up, which only the commands that read clock times should pay.
   */
  timeZone(): string;
  /** This machine's name. */
  hostname(): string;
  /** Aborted on SIGINT or SIGTERM; long-running commands stop cleanly when it fires. */
  signal: AbortSignal;
}

/** The part of `Deno.stdin` commands use. */
export interface StdinReader {
  read(buffer: Uint8Array): Promise<number | null>;
  isTerminal(): boolean;
}

/** A {@linkcode StdinReader} over fixed bytes, for tests and embedding. */
export function bytesReader(data: string | Uint8Array): StdinReader {
  let rest = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return {
    read(buffer) {
      if (rest.length === 0) return Promise.resolve(null);
      const n = Math.min(buffer.length, rest.length);
      buffer.set(rest.subarray(0, n));
      rest = rest.subarray(n);
      return Promise.resolve(n);
    },
    isTerminal: () => false,
  };
}

/** What every command module exports. */
export interface CommandModule {
  /** Full help text; its first line is the usage line. */
  help: string;
  /** Runs the command and returns its exit code. Never exits the process. */
  run(ctx: Context): Promise<number>;
}

/** Bad invocation: exits 64 with the command's usage line and `error: <message>`. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A failure the user can act on: exits 1 with the message and, when given, a hint. */
export class CliError extends Error {
  override name = "CliError";
  constructor(message: string, readonly hint?: string) {
    super(message);
  }
}

/** The first line of a help text. */
export function usageLine(help: string): string {
  return help.split("\n", 1)[0] ?? help;
}

/**
 * A command's project root: `--root` (default: the working directory) made absolute. One that
 * does not exist is refused: a typo would otherwise be created, or report nothing, unnoticed.
 */
export async function existingRoot(flag: string | undefined, cwd: string): Promise<string> {
  const root = absolutePath(flag ?? ".", cwd);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(root);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    throw new CliError(
      `the project root "${root}" does not exist`,
      "check the --root path, or create the directory first",
    );
  }
  if (!info.isDirectory) {
    throw new CliError(
      `the project root "${root}" is not a directory`,
      "point --root at the project's directory",
    );
  }
  return root;
}
