/**
 * Reading an agent's pane: where the conversation, the input box and the footer are, and what
 * state the agent is in. The patterns are data (patterns.ts); this module only applies them.
 *
 * The 2.1.x screen is: conversation, many blank lines, the input box between two `─` rules, the
 * footer (reference §9). A banner can stand 30 lines above the bottom, so the judgement looks at
 * the last 20 non-blank lines of the conversation, plus everything below it.
 *
 * @module
 */

import {
  AUTOCONTINUE_CANCELLED,
  BUSY,
  DANGEROUS_PROMPTS,
  INPUT_PLACEHOLDERS,
  LAST_LINES_REFUSAL,
  LIMIT_CONTEXT,
  LIMIT_LINES,
  LIMIT_MENU,
  MENU_POINTER,
  NATIVE_AUTOCONTINUE,
  PERMANENT_PROBLEMS,
  RESET_LINE,
  SAFE_MENU_CHOICE,
  TRANSIENT_API_ERRORS,
} from "./screen_patterns.ts";
import { firstMatch } from "./patterns.ts";

/** The parts of a pane. */
export interface Screen {
  /** Every line, trailing spaces removed. */
  lines: string[];
  /** The conversation: everything above the input box (or above a dialog). */
  conversation: string[];
  /** The input box's text, or null when there is no input box (a dialog, a prompt, no agent). */
  input: string | null;
  /** Below the input box: status and hints. */
  footer: string[];
  /** A dialog or prompt that stands where the input box would be. */
  below: string[];
}

/** What the pane shows. The names are the watcher's JSON `state` values. */
export type PaneState =
  | "usage_limit"
  | "native_autocontinue"
  | "transient_api_error"
  | "busy"
  | "permanent"
  | "dangerous_prompt"
  | "limit_menu"
  | "normal";

/** A judged pane. */
export interface Classification {
  state: PaneState;
  /** Which rule decided, for logs and refusals. */
  reason: string;
  /** The input box is there and empty: a key typed now goes to the agent's prompt. */
  idle: boolean;
  /** The banner or error line, which identifies one limit episode. */
  signature?: string;
  /** The reset as written (usage limits), or the native auto-continue time. */
  resetText?: string;
  /** The limit's kind (`5-hour`, `weekly`, …), which bounds how far ahead it resets. */
  limitKind?: string;
  /** How the pane is resumed: text then Enter, or Enter alone ("Press Enter to retry"). */
  keys?: "text" | "enter";
}

const RULE = /^\s*─{10,}\s*$/;
const INPUT = /^\s*[❯>][\s\u00a0]?(.*)$/;
const OLD_BOX_INPUT = /^\s*│\s*>\s?(.*?)\s*│\s*$/;

/** Splits a captured pane into its parts. */
export function parseScreen(text: string): Screen {
  const lines = text.replace(/\r/g, "").split("\n").map((line) => line.trimEnd());
  while (lines.length > 0 && lines.at(-1) === "") lines.pop();
  // The input box: the last two rules with a `❯` line right under the first.
  for (let second = lines.length - 1; second > 0; second--) {
    if (!RULE.test(lines[second]!)) continue;
    let first = second - 1;
    while (first >= 0 && !RULE.test(lines[first]!)) first--;
    if (first < 0) break;
    const inside = lines.slice(first + 1, second);
    const match = inside.length > 0 ? INPUT.exec(inside[0]!) : null;
    if (match) {
      return {
        lines,
        conversation: lines.slice(0, first),
        input: [match[1]!, ...inside.slice(1)].join("\n").replace(/\u00a0/g, " ").trim(),
        footer: lines.slice(second + 1),
        below: [],
      };
    }
    break;
  }
  // Older builds draw the input in a box: ╭───╮ │ > … │ ╰───╯.
  for (let i = lines.length - 1; i > 0; i--) {
    const match = OLD_BOX_INPUT.exec(lines[i]!);
    if (match && /^\s*╭/.test(lines[i - 1]!) && /^\s*╰/.test(lines[i + 1] ?? "")) {
      return {
        lines,
        conversation: lines.slice(0, i - 1),
        input: match[1]!.trim(),
        footer: lines.slice(i + 2),
        below: [],
      };
    }
  }
  // A bare input line (`❯` and a no-break space) at the bottom, as in a partial capture.
  const last = lines.length - 1;
  if (last >= 0 && /^❯\u00a0/.test(lines[last]!)) {
    return {
      lines,
      conversation: lines.slice(0, last),
      input: lines[last]!.slice(2).trim(),
      footer: [],
      below: [],
    };
  }
  // No input box: a dialog or prompt stands below the last rule, if there is one.
  let rule = lines.length - 1;
  while (rule >= 0 && !RULE.test(lines[rule]!)) rule--;
  return rule >= 0
    ? {
      lines,
      conversation: lines.slice(0, rule),
      input: null,
      footer: [],
      below: lines.slice(rule),
    }
    : { lines, conversation: lines, input: null, footer: [], below: [] };
}

/** The last `n` non-blank lines. */
export function lastNonBlank(lines: readonly string[], n: number): string[] {
  return lines.filter((line) => line.trim() !== "").slice(-n);
}

/** A line without the client's leading glyphs (`⎿`, `●`, `⚠`, spinners) and indentation. */
function bare(line: string): string {
  return line.replace(/^[\s⎿●⚠✻✶✢✽·∙*◐◑◒◓⏺]+/u, "");
}

/** The conversation's last 20 non-blank lines, without fenced code and quoted text. */
function conversationTail(conversation: readonly string[]): string[] {
  const kept: string[] = [];
  let fenced = false;
  for (const line of conversation) {
    if (/^\s*(?:[●⎿]\s*)?```/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced || /^\s*(?:>|▎|│)/.test(line)) continue;
    kept.push(line);
  }
  return lastNonBlank(kept, 20);
}

function inputIsEmpty(input: string | null): boolean {
  return input !== null && (input === "" || INPUT_PLACEHOLDERS.some((p) => p.test(input)));
}

/** A line that belongs to a banner (not newer conversation). */
function isLimitContext(line: string): boolean {
  const text = bare(line);
  return /^\s{20,}\S/.test(line) || // a right-aligned status note
    RESET_LINE.test(text) ||
    LIMIT_CONTEXT.some((p) => p.test(text)) ||
    LIMIT_LINES.some((p) => p.pattern.test(text));
}

function limitKind(text: string, kind: string): string {
  if (kind !== "from-name") return kind;
  const named = /(5-hour|session|weekly|opus|sonnet|fable|usage credit)/i.exec(text);
  return named ? named[1]!.toLowerCase() : "5-hour";
}

/** The last assistant item: its `●` line and the indented lines under it. */
function lastItem(tail: readonly string[]): { text: string; end: number } | undefined {
  for (let i = tail.length - 1; i >= 0; i--) {
    if (!/^\s*●/.test(tail[i]!)) continue;
    let end = i + 1;
    while (end < tail.length && /^\s{2,}\S/.test(tail[end]!) && !/^\s*[●❯]/.test(tail[end]!)) end++;
    return { text: tail.slice(i, end).map(bare).join(" "), end };
  }
  return undefined;
}

/**
 * Classifies a captured pane. The order is the safety order: a dialog or prompt first (never
 * type into it), then a busy agent, then the limit states, then final errors.
 */
export function classifyScreen(text: string): Classification {
  const screen = parseScreen(text);
  const tail = conversationTail(screen.conversation);
  const idle = inputIsEmpty(screen.input);
  const around = [...tail.slice(-8), ...screen.below, ...screen.footer];

  if (around.some((line) => LIMIT_MENU.test(line))) {
    const start = screen.lines.findIndex((line) => LIMIT_MENU.test(line));
    const pointer = screen.lines.slice(start).find((line) => MENU_POINTER.test(line));
    const safe = pointer !== undefined && SAFE_MENU_CHOICE.test(pointer);
    return {
      state: "limit_menu",
      reason: safe
        ? 'limit menu on "Stop and wait for limit to reset"'
        : `limit menu on ${pointer ? JSON.stringify(MENU_POINTER.exec(pointer)![1]) : "no option"}`,
      idle: false,
      ...(safe ? { keys: "enter" as const } : {}),
      ...resetNear(screen.lines, start),
    };
  }
  for (const line of around) {
    const prompt = firstMatch(DANGEROUS_PROMPTS, line);
    if (prompt) return { state: "dangerous_prompt", reason: prompt.name, idle: false };
  }
  for (const line of [...tail.slice(-3), ...screen.footer]) {
    const busy = firstMatch(BUSY, line);
    if (busy) return { state: "busy", reason: busy.name, idle };
  }

  // A limit banner: a limit line with a reset on it or just below, and nothing newer after it.
  for (let i = tail.length - 1; i >= 0; i--) {
    const line = bare(tail[i]!);
    const limit = LIMIT_LINES.find((p) => p.pattern.test(line));
    if (!limit) continue;
    const resetAt = [i, i + 1, i + 2, i + 3].find((j) =>
      j < tail.length && RESET_LINE.test(bare(tail[j]!))
    );
    if (resetAt === undefined) continue;
    if (!tail.slice(i + 1).every(isLimitContext)) break; // newer conversation below: an old banner
    const resetText = bare(tail[resetAt]!);
    const banner = { signature: line, resetText, limitKind: limitKind(line, limit.kind) };
    const after = [...tail.slice(i + 1), ...screen.footer];
    const native = after.findLastIndex((l) => NATIVE_AUTOCONTINUE.test(bare(l)));
    const cancelled = after.findLastIndex((l) => AUTOCONTINUE_CANCELLED.test(l));
    if (native >= 0 && native > cancelled) {
      const when = NATIVE_AUTOCONTINUE.exec(bare(after[native]!))?.[1]?.trim();
      return {
        state: "native_autocontinue",
        reason: "the client will continue by itself",
        idle,
        ...banner,
        ...(when ? { resetText: when } : {}),
      };
    }
    return { state: "usage_limit", reason: limit.name, idle, keys: "text", ...banner };
  }

  const item = lastItem(tail);
  const latest = item && tail.slice(item.end).every((l) => l.trim() === "") ? item.text : "";
  const lastLines = [latest, ...tail.slice(-6).map(bare)];
  for (const line of lastLines) {
    const problem = firstMatch(PERMANENT_PROBLEMS, line);
    if (problem) return { state: "permanent", reason: problem.name, idle, signature: line };
  }
  if (
    /^API Error\b|Press Enter to retry|is experiencing high load/i.test(latest) ||
    tail.some((l) => /Press Enter to retry/i.test(l))
  ) {
    const source = /Press Enter to retry/i.test(latest)
      ? latest
      : tail.find((l) => /Press Enter to retry/i.test(l)) ?? latest;
    const error = firstMatch(TRANSIENT_API_ERRORS, source);
    if (error) {
      return {
        state: "transient_api_error",
        reason: error.name,
        idle: idle || /Press Enter to retry/i.test(source),
        signature: bare(source),
        keys: /Press Enter to retry/i.test(source) ? "enter" : "text",
      };
    }
  }
  return { state: "normal", reason: "nothing to act on", idle };
}

/** The reset of the banner a menu belongs to: the nearest reset line above it, or in it. */
function resetNear(lines: readonly string[], index: number): { resetText?: string } {
  const inMenu = lines.slice(index).find((line) => RESET_LINE.test(line));
  const above = lines.slice(0, index).findLast((line) => RESET_LINE.test(line));
  const found = above ?? inMenu;
  return found ? { resetText: bare(found) } : {};
}

/**
 * The last check before typing (spec/error-recovery.md §5.1): the last 5 non-blank lines must
 * show no confirmation or destructive word. Returns the offending line, or undefined.
 */
export function lastLinesRefusal(text: string): string | undefined {
  return lastNonBlank(parseScreen(text).lines, 5).find((line) => LAST_LINES_REFUSAL.test(line));
}
