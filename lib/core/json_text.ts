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

/** Where a top-level member of a JSON object is: its key and its value's span in the text. */
interface Member {
  key: string;
  keyStart: number;
  valueStart: number;
  valueEnd: number;
}

/** The offset just past the JSON value that starts at `at` in valid JSON `text`. */
function valueEnd(text: string, at: number): number {
  let depth = 0;
  let i = at;
  do {
    const c = text[i]!;
    if (c === '"') {
      for (i++; text[i] !== '"'; i++) if (text[i] === "\\") i++;
    } else if (c === "{" || c === "[") {
      depth++;
    } else if (c === "}" || c === "]") {
      depth--;
    } else if (depth === 0) {
      while (i + 1 < text.length && !/[\s,}\]]/.test(text[i + 1]!)) i++;
    }
    i++;
  } while (depth > 0);
  return i;
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && /[\s\uFEFF]/.test(text[at]!)) at++;
  return at;
}

/** The top-level members of a JSON object's text, in order, and where its braces are. */
function objectMembers(text: string): { open: number; close: number; members: Member[] } {
  const open = skipSpace(text, 0);
  if (text[open] !== "{") throw new Error("not a JSON object");
  const members: Member[] = [];
  let at = skipSpace(text, open + 1);
  while (text[at] === '"') {
    const keyEnd = valueEnd(text, at);
    const key = JSON.parse(text.slice(at, keyEnd)) as string;
    const valueStart = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const end = valueEnd(text, valueStart);
    members.push({ key, keyStart: at, valueStart, valueEnd: end });
    at = skipSpace(text, end);
    if (text[at] === ",") at = skipSpace(text, at + 1);
  }
  if (text[at] !== "}") throw new Error("not a JSON object");
  return { open, close: at, members };
}

/**
 * `text`, a JSON object as someone wrote it, with `fields` set and every other byte kept: big
 * numbers stay exact, spacing and key order stay theirs. A member that exists has its value
 * replaced where it stands (the last one, when a key repeats: that is the one parsers read); a
 * new one is added after the last member, spaced like the first. A field set to `undefined` is
 * removed (every member of that key, so that no earlier duplicate takes its place). With
 * `pretty`, values are written indented the way the text is (its unit and line ending), else on
 * one line. Throws on text that is not a JSON object.
 */
export function setJsonFields(
  text: string,
  fields: Record<string, unknown>,
  { pretty = false }: { pretty?: boolean } = {},
): string {
  JSON.parse(text); // only valid JSON is edited
  const { open, close, members } = objectMembers(text);
  const edits: { start: number; end: number; text: string }[] = [];
  const added: string[] = [];
  const first = members[0];
  const indent = first ? text.slice(open + 1, first.keyStart) : "";
  const colon = first
    ? text.slice(valueEnd(text, first.keyStart), first.valueStart).replace(/^\s+(?=:)/, "")
    : ":";
  const format = pretty ? prettyFormat(text, indent) : (value: unknown) => JSON.stringify(value);
  const removed = new Set<Member>();
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) {
      for (const member of members) if (member.key === key) removed.add(member);
      continue;
    }
    const json = format(value);
    const member = members.findLast((m) => m.key === key);
    if (member) edits.push({ start: member.valueStart, end: member.valueEnd, text: json });
    else added.push(`${JSON.stringify(key)}${colon}${json}`);
  }
  const kept = members.filter((m) => !removed.has(m));
  const cuts: { start: number; end: number }[] = [];
  for (const [i, member] of members.entries()) {
    if (!removed.has(member)) continue;
    // The member and one comma beside it: the one after it, or, for the last, the one before.
    const next = members[i + 1];
    const previous = members.slice(0, i).findLast((m) => !removed.has(m));
    if (next) cuts.push({ start: member.keyStart, end: next.keyStart });
    else if (previous) cuts.push({ start: previous.valueEnd, end: member.valueEnd });
    else cuts.push({ start: open + 1, end: close }); // the only one: `{}` stays
  }
  // Cuts of neighbours overlap: each stretch is cut once.
  for (const cut of cuts.sort((a, b) => a.start - b.start)) {
    const last = edits.at(-1);
    if (last && last.text === "" && cut.start <= last.end) last.end = Math.max(last.end, cut.end);
    else edits.push({ ...cut, text: "" });
  }
  if (added.length > 0) {
    const last = kept.at(-1);
    edits.push(
      last
        ? {
          start: last.valueEnd,
          end: last.valueEnd,
          text: added.map((m) => `,${indent}${m}`).join(""),
        }
        : { start: open + 1, end: close, text: added.join(",") },
    );
  }
  let out = text;
  for (const edit of edits.sort((a, b) => b.start - a.start || b.end - a.end)) {
    out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  }
  return out;
}

/**
 * How a value is written into `text` so that it looks like the rest: indented by the unit of the
 * first member's line (`indent` is what stands before it), with the text's line ending; on one line
 * when the text is on one line.
 */
function prettyFormat(text: string, indent: string): (value: unknown) => string {
  const newline = indent.lastIndexOf("\n");
  if (newline < 0) return (value) => JSON.stringify(value);
  const unit = indent.slice(newline + 1) || "  ";
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  return (value) => JSON.stringify(value, null, unit).replace(/\n/g, eol + unit);
}
