/**
 * Output helpers for `deno task demo`: headings, narration, and commands shown with what they
 * printed.
 *
 * @module
 */

import { runLifeline, type RunResult } from "../tests/helpers/lifeline.ts";

const encoder = new TextEncoder();
const color = Deno.stdout.isTerminal() && !Deno.env.get("NO_COLOR");
const paint = (code: string, text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);

/** Prints lines. */
export function say(...lines: string[]): void {
  Deno.stdout.writeSync(encoder.encode(lines.join("\n") + "\n"));
}

/** Prints a section heading. */
export function heading(title: string): void {
  say("", paint("1;36", `━━ ${title} ${"━".repeat(Math.max(0, 76 - title.length))}`));
}

/** Prints a step of narration. */
export function step(text: string): void {
  say(paint("1", `▸ ${text}`));
}

/** Prints text indented, dimmed: something a command printed or a file holds. */
export function show(text: string, prefix = "  │ "): void {
  const body = text.replace(/\n$/, "");
  if (body === "") {
    say(paint("2", `${prefix}(nothing)`));
    return;
  }
  say(...body.split("\n").map((line) => paint("2", prefix + line)));
}

/** Runs `lifeline <args>`, shows the command line and its output, and returns the result. */
export async function lifeline(
  args: string[],
  options: { stdin?: string; env: Record<string, string>; cwd?: string; quiet?: boolean },
): Promise<RunResult> {
  const shown = options.stdin === undefined ? "" : " < input.json";
  say(paint("33", `  $ lifeline ${args.map(shellQuote).join(" ")}${shown}`));
  const result = await runLifeline(args, options);
  if (!options.quiet) {
    show(result.stdout);
    if (result.stderr) show(result.stderr, "  ! ");
  }
  say(paint("2", `  (exit ${result.code})`));
  return result;
}

/** `word` quoted for a POSIX shell when it needs to be. */
function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** Fails the demo with a message when `condition` is false: the demo checks what it shows. */
export function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`demo check failed: ${message}`);
}
