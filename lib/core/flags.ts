/**
 * Argument parsing for every command: `node:util` `parseArgs`, strict, with its errors turned into
 * {@linkcode UsageError}s.
 *
 * Hooks import this module lazily and only when they were given arguments: the first `node:`
 * import costs about 6 ms of Node-compatibility start-up, a quarter of a hook's whole budget.
 *
 * @module
 */

import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "./cli.ts";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Parsed flags and positionals. */
export interface Parsed<T extends Options> {
  values: ReturnType<typeof parseArgs<{ options: T; strict: true; allowPositionals: true }>>[
    "values"
  ];
  positionals: string[];
}

/**
 * Parses `args` strictly against `options`. `--help` is always accepted. Unknown flags, missing
 * values and (unless `maxPositionals` allows them) positionals throw a {@linkcode UsageError}.
 */
export function parseFlags<T extends Options>(
  args: readonly string[],
  options: T,
  { maxPositionals = 0 }: { maxPositionals?: number } = {},
): Parsed<T> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { ...options, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    // parseArgs adds advice about `--` that does not fit our commands; keep the first sentence.
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(message.split(/\.\s/, 1)[0]!.replace(/\.$/, ""));
  }
  if (parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument "${parsed.positionals[maxPositionals]}"`);
  }
  return parsed as unknown as Parsed<T>;
}

/** Parses a flag value as a whole number within bounds, naming the flag when it is not one. */
export function integerFlag(
  name: string,
  value: string | undefined,
  fallback: number,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (
    !/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number) || number < min || number > max
  ) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got "${value}"`);
  }
  return number;
}
