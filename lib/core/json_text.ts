/**
 * JSON text parsing that says where it broke, and readable messages for zod issues. Settings and
 * config files are edited by hand; "line 3, column 1" is what the user needs to fix them.
 *
 * @module
 */

/** A JSON syntax error with its 1-based position. */
export interface JsonSyntaxError {
  line: number;
  column: number;
  reason: string;
}

/** Parses JSON text, or returns where and why it is not JSON. */
export function parseJsonText(
  text: string,
): { ok: true; value: unknown } | { ok: false; error: JsonSyntaxError } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const reason = message.replace(/ in JSON at position \d+.*$/, "").replace(/ \(line.*$/, "");
    const at = /\(line (\d+) column (\d+)\)/.exec(message);
    if (at) return { ok: false, error: { line: Number(at[1]), column: Number(at[2]), reason } };
    const position = /at position (\d+)/.exec(message);
    const offset = position ? Number(position[1]) : text.length;
    return { ok: false, error: { ...lineAndColumn(text, offset), reason } };
  }
}

/** 1-based line and column of a character offset. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}

/** The parts of a zod issue that {@linkcode describeIssue} reads. */
export interface IssueLike {
  code?: string;
  path: readonly PropertyKey[];
  message: string;
  expected?: unknown;
  keys?: readonly string[];
  values?: readonly unknown[];
  minimum?: unknown;
  maximum?: unknown;
  origin?: string;
}

/** Dotted path of an issue, e.g. `watch.intervalSeconds` or `ladder[1]`. */
export function issuePath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const key of path) {
    text += typeof key === "number" ? `[${key}]` : `${text ? "." : ""}${String(key)}`;
  }
  return text || "(top level)";
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** One readable reason for a zod issue (zod/mini ships no messages of its own). */
export function describeIssue(issue: IssueLike, input: unknown): string {
  switch (issue.code) {
    case "invalid_type": {
      const actual = valueAt(input, issue.path);
      return actual === undefined
        ? `required ${String(issue.expected)} is missing`
        : `expected ${String(issue.expected)}, got ${typeName(actual)}`;
    }
    case "unrecognized_keys":
      return `unknown key${issue.keys && issue.keys.length > 1 ? "s" : ""} ${
        (issue.keys ?? []).map((key) => JSON.stringify(key)).join(", ")
      }`;
    case "invalid_value":
      return `must be one of ${(issue.values ?? []).map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      return issue.origin === "array" || issue.origin === "string"
        ? `must have at least ${String(issue.minimum)} ${
          issue.origin === "array" ? "entries" : "characters"
        }`
        : `must be at least ${String(issue.minimum)}`;
    case "too_big":
      return issue.origin === "array" || issue.origin === "string"
        ? `must have at most ${String(issue.maximum)} ${
          issue.origin === "array" ? "entries" : "characters"
        }`
        : `must be at most ${String(issue.maximum)}`;
    default:
      return issue.message;
  }
}
