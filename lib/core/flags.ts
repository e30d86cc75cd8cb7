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
import { closest } from "./suggest.ts";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Parsed flags and positionals. */
export interface Parsed<T extends Options> {
  values: ReturnType<typeof parseArgs<{ options: T; strict: true; allowPositionals: true }>>[
    "values"
  ];
  positionals: string[];
}

/**
 * `--name -1` as `--name=-1` for flags that take a value: parseArgs reads a value that starts with
 * a dash as a flag of its own, and a negative number deserves the flag's own range message.
 */
function joinNegativeNumbers(args: readonly string[], options: Options): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return [...joined, ...args.slice(i)];
    const name = /^--([^=]+)$/.exec(arg)?.[1];
    const next = args[i + 1];
    if (name && options[name]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/** parseArgs' message made ours: its first sentence, a hint for a flag that looks like a typo. */
function usageMessage(error: unknown, options: Options): string {
  // parseArgs adds advice about `--` that does not fit our commands; keep the first sentence.
  const message = (error instanceof Error ? error.message : String(error)).split(/\.\s/, 1)[0]!
    .replace(/\.$/, "");
  const unknown = /^Unknown option '--([^']+)'$/.exec(message)?.[1];
  const match = unknown === undefined ? undefined : closest(unknown, Object.keys(options));
  if (match) return `${message} (did you mean "--${match}"?)`;
  const ambiguous = /^Option '(--[^ ']+)(?: <value>)?' argument is ambiguous$/.exec(message)?.[1];
  if (ambiguous) {
    return `${ambiguous} needs a value; for a value that starts with "-", write ${ambiguous}=<value>`;
  }
  return message;
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
  const all = { ...options, help: { type: "boolean", short: "h" } } as Options;
  let parsed;
  try {
    parsed = parseArgs({
      args: joinNegativeNumbers(args, all),
      options: all,
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    throw new UsageError(usageMessage(error, all));
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

const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000 };

/**
 * Parses a flag value that is an age (`30m`, `12h`, `2d`) into milliseconds, naming the flag and
 * an example of its own (`like`) when it is not one.
 */
export function ageFlag(name: string, value: string, like: string): number {
  const match = /^(\d{1,9})([dhm])$/.exec(value.trim());
  if (!match) {
    throw new UsageError(`--${name} must be a number and d, h or m (like ${like}), got "${value}"`);
  }
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}
