/**
 * Reading an agent's pane: where the conversation, the input box and the footer are, what each
 * conversation item is, and what state the agent is in. The patterns are data
 * (screen_patterns.ts); this module only normalises, segments and applies them. Pure.
 *
 * The 2.1.x screen is: conversation, blank lines, the input box between two `─` rules, then the
 * footer and any status-line rows (reference §9). Older builds draw the input in a box
 * (`╭─╮ │ > │ ╰─╯`). The client wraps long lines itself, at any width, so tmux cannot rejoin
 * them: items are rebuilt from their glyph line and the indented lines under it.
 *
 * A banner counts only where the client draws its own notices: under the user's prompt (`⎿`),
 * as the client's own `●` notice, right-aligned, or in the footer. The same words in a tool's
 * output, an assistant message's body, a quote or a code block are text, not a limit.
 *
 * @module
 */

import { firstMatch, type NamedPattern } from "./patterns.ts";
import {
  API_ERROR_ITEM,
  BANNER_COMPANIONS,
  BRACKETED_CONFIRMATION,
  BUSY,
  CLIENT_NOTICE,
  DIALOGS,
  EFFORT_WIDGET,
  INPUT_PLACEHOLDERS,
  LAST_LINES_REFUSAL,
  LIMIT_BANNERS,
  LIMIT_MENU,
  LIMIT_MENU_OPTION,
  LIMIT_NAMES,
  MAX_ITEM_CHARS,
  MENU_KEY_HINT,
  MENU_POINTER,
  NATIVE_ARMED,
  NATIVE_CANCELLED,
  PERMANENT_PROBLEMS,
  PRESS_ENTER_TO_RETRY,
  RESET_MENTION,
  SAFE_MENU_CHOICE,
  TASK_WIDGET,
  TRANSIENT_API_ERRORS,
} from "./screen_patterns.ts";

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

/** What a conversation item is, by its leading glyph and place. */
export type ItemKind =
  /** `❯ prompt` (or `> prompt`): the user's message. */
  | "user"
  /** `● text`: an assistant message. */
  | "assistant"
  /** `● Bash(…)`, `● Ran 1 shell command`: a tool call. */
  | "tool"
  /** `● API Error: …`, `● Usage limit reached · …`: a notice the client draws as an item. */
  | "client"
  /** `⎿ …`: a result under the item before it. */
  | "result"
  /** `✻ …`: a spinner or turn-duration row. */
  | "status"
  /** `⚠ …`, or a right-aligned line: a client notice. */
  | "notice"
  /** `▎ …`, `│ …`: quoted text. */
  | "quote"
  /** The task list the client draws above the input box. */
  | "widget"
  /** An indented line that continues no item it can see (its glyph line scrolled away, or it
   * follows a row that takes no continuation): text of unknown origin, never a notice. */
  | "fragment"
  /** Anything else (the welcome header, fragments). */
  | "other";

/** One conversation item: its glyph line and the lines that continue it. */
export interface Item {
  kind: ItemKind;
  /** The item's text without its glyph, wrapped lines rejoined with single spaces. */
  text: string;
  /** Its first line and the line after its last, in {@linkcode Screen.lines}. */
  start: number;
  end: number;
  /** For a result: the index of the item it hangs under, or null. */
  parent: number | null;
}

/** The parts of a pane. */
export interface Screen {
  /** Every line, normalised (escapes removed, no-break spaces and curly quotes made plain). */
  lines: string[];
  /** The pane's width as the client drew it (its widest rule, else its widest line). */
  width: number;
  /** The conversation: lines above the input box or dialog. */
  conversation: string[];
  items: Item[];
  /** The input box's text, or null when there is none (a dialog, a fragment, no agent). */
  input: string | null;
  /** How the input box was found. */
  inputBox: "rules" | "box" | "bare" | null;
  /** Below the input box: hints, notices, status-line rows. */
  footer: string[];
  /** A dialog or prompt that stands where the input box would be. */
  dialog: string[];
}

/** A judged pane. */
export interface ScreenReading {
  state: PaneState;
  /** Which rule decided, in words, for logs, refusals and `--explain`. */
  rule: string;
  /** The input box is there and empty: a key typed now goes to the agent's prompt. */
  idle: boolean;
  /** The input box's text (placeholders read as empty), or null. */
  input: string | null;
  /** The layout was recognised: an input box between rules or in a box, or a known dialog. */
  confident: boolean;
  /** The banner or error that identifies one episode. */
  banner?: string;
  /** The reset as written (usage limits), or the native auto-continue time. */
  resetText?: string;
  /** The limit's kind (`5-hour`, `weekly`, …). */
  limitKind?: string;
  /** How the pane is resumed: text then Enter, or Enter alone ("Press Enter to retry", a menu). */
  keys?: "text" | "enter";
  /** The kind of the latest conversation item (companion rows aside), when there is one. */
  latest?: ItemKind;
  /** The placeholder the input box shows, read as empty (see `placeholderIsDim`). */
  placeholder?: string;
  /** The client's vim mode indicator in the footer (`-- INSERT --`, `-- NORMAL --`, …). */
  vimMode?: string;
}

/** Most lines a capture is read for (the visible screen plus the 20 lines of history). */
const MAX_LINES = 400;
/** Longest line kept; a pane is at most a few hundred columns wide. */
const MAX_LINE = 1000;

const RULE = /^\s{0,4}[─━]{4,}\s{0,4}$/;
/** The input box's rules: unindented and full width (a rule in a draft is indented, and short). */
const BOX_RULE = /^[─━]{4,}$/;
/** The top border of the limit menu's dialog (2.1.x). */
const DIALOG_TOP = /^\s{0,4}▔{4,}\s{0,4}$/;
const FRAME_TOP = /^\s{0,4}[╭┌][─━]{4,}[╮┐]\s{0,4}$/;
const FRAME_BOTTOM = /^\s{0,4}[╰└][─━]{4,}[╯┘]\s{0,4}$/;
const FRAMED = /^\s{0,4}│ ?(.*?) ?│\s{0,4}$/;
const PROMPT_LINE = /^\s{0,2}[❯>›] ?(.*)$/;
const GLYPH = /^[⎿●⏺⚠✻✶✢✽✳✺*·◐◑◒◓❯>›▎│┃]/;
const STATUS_GLYPH = /^[✻✶✢✽✳✺*·◐◑◒◓]\s/;
const TOOL_CALL =
  /^(?:[A-Za-z][\w.:-]{0,60}\(|(?:Ran|Read|Wrote|Updated|Searched|Listed|Fetched|Edited|Did not run|Called) \d)/;

// Terminal escapes are what these patterns are about, so they name control characters.
const ESCAPES =
  // deno-lint-ignore no-control-regex
  /\x1b\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)?|\x1b\[[0-?]{0,32}[ -/]{0,8}[@-~]|\x1b[@-_]?/g;
// deno-lint-ignore no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f]/g;
// deno-lint-ignore no-control-regex
const PROMPT_AFTER_SGR = /^(?:\x1b\[[0-9;]{0,32}m){0,16}❯\u00a0/;
// deno-lint-ignore no-control-regex
const SGR_SPLIT = /(\x1b\[[0-9;]{0,32}m)/;
// deno-lint-ignore no-control-regex
const SGR = /^\x1b\[([0-9;]{0,32})m$/;

/**
 * Normalises a capture: ANSI and OSC escapes removed, no-break and other wide spaces made plain,
 * curly quotes straightened, trailing spaces dropped, the size bounded.
 */
export function normalise(text: string): string[] {
  const plain = text
    .slice(-MAX_LINES * 300)
    .replace(ESCAPES, "")
    .replace(/\r/g, "")
    .replace(/[\u00a0\u2000-\u200a\u202f\u3000]/g, " ")
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(CONTROLS, "");
  const lines = plain.split("\n").slice(-MAX_LINES).map((line) =>
    line.slice(0, MAX_LINE).trimEnd()
  );
  while (lines.length > 0 && lines.at(-1) === "") lines.pop();
  return lines;
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/** A line without the client's leading glyphs (`⎿`, `●`, `⚠`, spinners) and indentation. */
export function bare(line: string): string {
  return line.replace(/^[\s⎿└●⏺⚠✻✶✢✽✳✺*·◐◑◒◓⏵⏸]+/u, "");
}

/** Lines with box frames taken off: `│ text │` is `text`, the frame's borders are blank. */
function unframe(lines: readonly string[]): string[] {
  return lines.map((line) => {
    if (FRAME_TOP.test(line) || FRAME_BOTTOM.test(line)) return "";
    const framed = FRAMED.exec(line);
    return framed ? framed[1]!.trimEnd() : line;
  });
}

/**
 * The conversation, with what stands in a box (a table, a boxed block of a reply, a boxed
 * prompt) marked as quoted text: in a box, a limit banner or an API error is somebody's text,
 * never the client's notice (a box still shows a prompt: prompts are looked for in every item).
 */
function quoteFramed(lines: readonly string[]): string[] {
  return lines.map((line) => {
    if (FRAME_TOP.test(line) || FRAME_BOTTOM.test(line)) return "";
    const framed = FRAMED.exec(line);
    return framed ? `▎ ${framed[1]!.trim()}` : line;
  });
}

/** Where the input box is: its text, and the lines above and below it. */
function findInputBox(
  lines: readonly string[],
  width: number,
): { input: string; above: number; below: number; how: "rules" | "box" } | undefined {
  const isBoxRule = (line: string) => BOX_RULE.test(line) && line.length >= width * 0.9;
  for (let second = lines.length - 1; second > 0; second--) {
    if (!isBoxRule(lines[second]!)) continue;
    let first = second - 1;
    while (first >= 0 && !isBoxRule(lines[first]!)) first--;
    if (first < 0) return undefined;
    const inside = lines.slice(first + 1, second);
    const prompt = inside.length > 0 ? PROMPT_LINE.exec(inside[0]!) : null;
    // A box of at most a few lines whose first line is the prompt: the input box. Anything
    // else between two rules is a dialog, or conversation.
    if (prompt && inside.length <= 12) {
      const text = [prompt[1]!, ...inside.slice(1).map((l) => l.trim())].join("\n").trim();
      return { input: text, above: first, below: second + 1, how: "rules" };
    }
    return undefined;
  }
  for (let i = lines.length - 2; i > 0; i--) {
    const framed = FRAMED.exec(lines[i]!);
    const prompt = framed ? PROMPT_LINE.exec(framed[1]!) : null;
    if (prompt && FRAME_TOP.test(lines[i - 1]!) && FRAME_BOTTOM.test(lines[i + 1] ?? "")) {
      return { input: prompt[1]!.trim(), above: i - 1, below: i + 2, how: "box" };
    }
  }
  return undefined;
}

function isCompanion(text: string): boolean {
  return BANNER_COMPANIONS.some((p) => p.test(text));
}

/** A `●` item that is the client's own notice (a banner, an API error), not the assistant's. */
function isClientNotice(text: string): boolean {
  return CLIENT_NOTICE.test(text) || LIMIT_BANNERS.some((p) => p.pattern.test(text)) ||
    NATIVE_ARMED.test(text) || isCompanion(text);
}

/** Splits conversation lines into items, rejoining the lines the client wrapped. */
export function parseItems(lines: readonly string[], width: number): Item[] {
  const items: Item[] = [];
  let fenced = false;
  const push = (kind: ItemKind, text: string, at: number, parent: number | null = null) => {
    items.push({
      kind,
      text: text.trim().slice(0, MAX_ITEM_CHARS),
      start: at,
      end: at + 1,
      parent,
    });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const text = line.trim();
    if (text === "") continue;
    const indent = indentOf(line);
    const current = items.at(-1);
    // A literal code fence: what stands between fences is quoted, whatever it says.
    if (/^(?:[●⏺⎿]\s*)?```/.test(text)) {
      fenced = !fenced;
      push("quote", text, i);
      continue;
    }
    if (fenced) {
      if (current?.kind === "quote") {
        current.text = `${current.text} ${text}`.slice(0, MAX_ITEM_CHARS);
        current.end = i + 1;
      } else push("quote", text, i);
      continue;
    }
    const extend = () => {
      current!.text = `${current!.text} ${text}`.slice(0, MAX_ITEM_CHARS);
      current!.end = i + 1;
    };
    // `· resets 3pm` under `⚠ You've hit your 5-hour limit`: the banner's second row.
    if (
      current && /^[·∙•] /.test(text) && LIMIT_BANNERS.some((p) => p.pattern.test(current.text))
    ) {
      extend();
      continue;
    }
    if (
      TASK_WIDGET.test(text) && (indent >= 1 || current?.kind === "widget") ||
      EFFORT_WIDGET.test(text) && indent >= 1
    ) {
      push("widget", text, i);
      continue;
    }
    // A fragment's API error whose JSON body or link stands on the next row, unindented.
    if (
      indent === 0 && current && API_ERROR_ITEM.test(current.text) &&
      /^(?:https?:\/\/|[{}"[\]]|[a-z])/.test(text)
    ) {
      extend();
      continue;
    }
    if (indent <= 1 && PROMPT_LINE.test(line) && /^[❯>›]/.test(text)) {
      push("user", text.replace(/^[❯>›] ?/, ""), i);
      continue;
    }
    if (indent <= 1 && /^[●⏺]/.test(text)) {
      const body = bare(text);
      push(isClientNotice(body) ? "client" : TOOL_CALL.test(body) ? "tool" : "assistant", body, i);
      continue;
    }
    if (indent <= 6 && /^[⎿└]/.test(text)) {
      let parent = items.length - 1;
      while (parent >= 0 && items[parent]!.kind === "result") parent--;
      push("result", bare(text), i, parent >= 0 ? parent : null);
      continue;
    }
    if (indent <= 2 && STATUS_GLYPH.test(text)) {
      push("status", bare(text), i);
      continue;
    }
    // A `⚠` row indented under a reply or a tool call is part of it, not the client's notice.
    const continues = current && ["assistant", "tool", "quote"].includes(current.kind);
    if (text.startsWith("⚠") && (indent <= 1 || (indent <= 4 && !continues))) {
      push("notice", bare(text), i);
      continue;
    }
    if (indent <= 2 && /^[▎│┃]/.test(text)) {
      push("quote", text.replace(/^[▎│┃]\s?/, ""), i);
      continue;
    }
    // Right-aligned: a client notice (`Automatic continue cancelled …` under the conversation).
    // The client never right-aligns a limit banner: one that stands so is somebody's text.
    if (
      indent >= 10 && line.length >= width - 2 && !GLYPH.test(text) &&
      !LIMIT_BANNERS.some((p) => p.pattern.test(text))
    ) {
      push("notice", text, i);
      continue;
    }
    // An old build's notice without `⎿`, under the prompt it answers.
    if (
      current?.kind === "user" && indent >= 2 && LIMIT_BANNERS.some((p) => p.pattern.test(text))
    ) {
      push("result", text, i, items.length - 1);
      continue;
    }
    if (current && indent >= 1 && !["status", "notice", "widget"].includes(current.kind)) {
      current.text = `${current.text} ${text}`.slice(0, MAX_ITEM_CHARS);
      current.end = i + 1;
      continue;
    }
    // A fragment's wrapped line: unindented, it goes on where the last one broke off.
    if (
      indent === 0 && current?.kind === "other" && /^[a-z]/.test(text) &&
      !/[.!?:]$/.test(lines[i - 1]?.trim() ?? "")
    ) {
      extend();
      continue;
    }
    push(indent >= 2 ? "fragment" : "other", text, i);
  }
  return items;
}

/** Splits a captured pane into its parts. */
export function parseScreen(text: string): Screen {
  const lines = normalise(text);
  const rules = lines.filter((l) => RULE.test(l)).map((l) => l.trim().length);
  const width = rules.length > 0 ? Math.max(...rules) : Math.max(0, ...lines.map((l) => l.length));
  const box = findInputBox(lines, width);
  if (box) {
    const conversation = quoteFramed(lines.slice(0, box.above));
    return {
      lines,
      width,
      conversation,
      items: parseItems(conversation, width),
      input: box.input,
      inputBox: box.how,
      footer: lines.slice(box.below),
      dialog: [],
    };
  }
  // A bare input line near the bottom: `❯` and a no-break space, as 2.1.x draws it, or an empty
  // `❯`/`>` row (a fragment, an old build), with at most a few footer rows under it. The
  // no-break space is checked in the raw text: a user's submitted prompt has a plain one.
  const raw = text.replace(/\r/g, "").trimEnd().split("\n");
  for (let back = 1; back <= Math.min(4, lines.length); back++) {
    const at = lines.length - back;
    if (!(/^❯\u00a0/.test(raw.at(-back) ?? "") || /^\s{0,2}[❯>]$/.test(lines[at]!))) continue;
    const conversation = quoteFramed(lines.slice(0, at));
    return {
      lines,
      width,
      conversation,
      items: parseItems(conversation, width),
      input: lines[at]!.trim().slice(1).trim(),
      inputBox: "bare",
      footer: lines.slice(at + 1),
      dialog: [],
    };
  }
  // No input box: a dialog or prompt stands below the last rule, when there is one.
  let rule = lines.length - 1;
  while (rule >= 0 && !RULE.test(lines[rule]!) && !DIALOG_TOP.test(lines[rule]!)) rule--;
  const conversation = quoteFramed(rule >= 0 ? lines.slice(0, rule) : lines);
  return {
    lines,
    width,
    conversation,
    items: parseItems(conversation, width),
    input: null,
    inputBox: null,
    footer: [],
    dialog: rule >= 0 ? unframe(lines.slice(rule + 1)).filter((l) => l.trim() !== "") : [],
  };
}

/**
 * Whether the input box of a capture with escapes (`capture-pane -e`) draws its text dim, as the
 * client draws a placeholder (reverse video on the cursor's first character, then SGR 2). A
 * draft that reads word for word like a placeholder is drawn in full colour: not dim.
 */
export function placeholderIsDim(ansi: string): boolean {
  const line = ansi.split("\n").findLast((l) => PROMPT_AFTER_SGR.test(l));
  if (!line) return false;
  const body = line.slice(line.indexOf("❯\u00a0") + 2);
  let dim = false;
  let seen = 0;
  // Every character after the first (the cursor, drawn reversed) must be drawn dim.
  for (const part of body.split(SGR_SPLIT)) {
    const sgr = SGR.exec(part);
    if (sgr) {
      for (const p of sgr[1]!.split(";")) {
        if (p === "2") dim = true;
        else if (p === "" || p === "0" || p === "22") dim = false;
      }
      continue;
    }
    for (const char of part.replace(ESCAPES, "")) {
      if (seen++ > 0 && char.trim() !== "" && !dim) return false;
    }
  }
  return seen > 1;
}

/** The last `n` non-blank lines. */
export function lastNonBlank(lines: readonly string[], n: number): string[] {
  return lines.filter((line) => line.trim() !== "").slice(-n);
}

function inputIsEmpty(input: string | null): boolean {
  if (input === null) return false;
  // A placeholder wraps in a narrow pane like any text.
  const text = input.replace(/\s+/g, " ").trim();
  return text === "" || INPUT_PLACEHOLDERS.some((p) => p.test(text));
}

/** The footer's rows, unframed and bare, and all of them joined (notices wrap there too). */
function footerTexts(footer: readonly string[]): string[] {
  const rows = unframe(footer).map((l) => bare(l.trim())).filter((l) => l !== "");
  return rows.length > 1 ? [...rows, rows.join(" ")] : rows;
}

/**
 * The client's own limit notice in the footer (`⚠ Usage limit reached · limit resets 5:54pm`,
 * wrapped onto a second row in a narrow pane). Only a `⚠` row: a status line the user configured
 * prints what it likes there.
 */
function footerLimitNotice(footer: readonly string[]): string | undefined {
  const rows = footer.map((l) => l.trim());
  for (let i = 0; i < rows.length; i++) {
    if (!rows[i]!.startsWith("⚠")) continue;
    const row = bare(rows[i]!);
    if (!LIMIT_BANNERS.some((p) => p.pattern.test(row))) continue;
    for (const text of [row, `${row} ${bare(rows[i + 1] ?? "")}`.trim()]) {
      if (RESET_MENTION.test(text)) return text;
    }
  }
  return undefined;
}

/** The items that are newer conversation. */
const NEWER: readonly ItemKind[] = ["user", "assistant", "tool"];

/** Items that stand where the client draws its own notices. */
function isTrusted(item: Item, items: readonly Item[]): boolean {
  if (item.kind === "client" || item.kind === "notice" || item.kind === "other") return true;
  if (item.kind !== "result") return false;
  // Under the user's prompt: the client's answer to it. Under a tool call or an assistant
  // message: their output. With its item above the capture, it is taken as the client's.
  return item.parent === null || items[item.parent]!.kind === "user";
}

/** Items the client adds after a banner, which do not make it old. */
function isBannerCompanion(item: Item, items: readonly Item[]): boolean {
  if (["notice", "client", "widget", "fragment"].includes(item.kind)) return true;
  if (item.kind === "status") {
    return isCompanion(item.text) || !BUSY.some((b) => b.pattern.test(item.text));
  }
  if (item.kind === "result") return isTrusted(item, items) || isCompanion(item.text);
  return isCompanion(item.text);
}

function limitKindOf(text: string): string {
  const named = LIMIT_NAMES.exec(text)?.[1]?.toLowerCase().replace(/[ _]/g, "-");
  if (!named) return "unnamed";
  return named === "five-hour" ? "5-hour" : named === "seven-day" ? "weekly" : named;
}

/** The reset part of a banner: from `resets …` to the next separator or hint. */
function resetTextOf(text: string): string | undefined {
  const at = text.search(RESET_MENTION);
  if (at < 0) return undefined;
  return text.slice(at).replace(/\s+(?:[·∙•—]\s|\/[a-z]).*$/i, "").replace(/[.,;]$/, "");
}

function nativeTime(text: string): string | undefined {
  const match = NATIVE_ARMED.exec(text);
  return match?.[1]?.trim() || undefined;
}

/**
 * Classifies a captured pane. The order is the safety order: a dialog or prompt first (never
 * type into it), then a busy agent, then the limit states, then permanent and transient errors.
 */
export function readScreen(text: string): ScreenReading {
  const screen = parseScreen(text);
  const { items } = screen;
  const input = screen.input;
  const idle = inputIsEmpty(input);
  const shown = input === null ? null : idle ? "" : input;
  const latestKind = latestItem(items)?.kind;
  const vim = screen.footer.map((l) => /-- ([A-Z]+(?: [A-Z]+)?) --/.exec(l)?.[1]).find(Boolean);
  const base = {
    idle,
    input: shown,
    confident: screen.inputBox === "rules" || screen.inputBox === "box",
    ...(latestKind ? { latest: latestKind } : {}),
    ...(idle && input !== null && input.trim() !== "" ? { placeholder: input.trim() } : {}),
    ...(vim ? { vimMode: vim } : {}),
  };
  const footer = footerTexts(screen.footer);
  const dialog = screen.dialog.map((l) => l.trim());
  // Under an input box, what stands above the user's latest message is history: a prompt the
  // client asks stands where the input box would be, never above it. So a quoted "[y/N]" or
  // menu in an earlier reply is not live; the current turn's output still is.
  const lastUser = screen.input === null ? -1 : items.findLastIndex((i) => i.kind === "user");
  const live = lastUser >= 0 ? items.slice(lastUser) : items;
  const liveFrom = lastUser >= 0 ? items[lastUser]!.start : 0;
  // The latest items, without the task list the client keeps drawing under them.
  const recent = live.filter((item) => item.kind !== "widget").slice(-4);
  const linesOf = (list: readonly Item[]) =>
    list.flatMap((item) =>
      screen.conversation.slice(item.start, item.end).map((l) => l.trim()).filter((l) => l !== "")
    );
  const recentLines = linesOf(recent);
  // What a key could hit: the dialog, the latest items, and the last raw lines whatever they
  // belong to (a prompt printed under the task list is still a prompt).
  const lastLines = lastNonBlank(screen.conversation.slice(liveFrom), 8).map((l) => bare(l.trim()));
  const near = [
    ...dialog,
    ...recent.map((item) => item.text),
    ...recentLines.map(bare),
    ...lastLines,
    ...footer,
  ];

  // 1. The limit menu (its question, or a pointer on one of its options), then any dialog. The
  // client's menu is its own: quoted in a reply or a tool's output it is a prompt (below), never
  // the menu's Enter.
  const own = recent.filter((item) => !["assistant", "tool", "quote"].includes(item.kind));
  const area = dialog.length > 0 ? dialog : linesOf(own);
  const pointer = area.find((l) =>
    MENU_POINTER.test(l) && (dialog.length > 0 || /^[❯>›]\s?\d{1,2}\./.test(l))
  );
  const option = (l: string) => LIMIT_MENU_OPTION.test(l.replace(/^[❯>›]\s?/, ""));
  const asked = [...dialog, ...own.map((item) => item.text), ...area, ...footer]
    .some((l) => LIMIT_MENU.test(l));
  if ((asked && area.some(option)) || (pointer !== undefined && option(pointer))) {
    // The client's menu takes the input box's place, or pushes it down, empty. Above an input
    // box that holds text, Enter could send the text: never.
    if (screen.input !== null && !idle) {
      return {
        ...base,
        idle: false,
        confident: true,
        state: "dangerous_prompt",
        rule: "the limit menu's words above an input box that holds text",
      };
    }
    const safe = pointer !== undefined && SAFE_MENU_CHOICE.test(pointer);
    const banner = findBanner(screen);
    return {
      ...base,
      idle: false,
      confident: true,
      state: "limit_menu",
      rule: safe
        ? 'the limit menu, on "Stop and wait for limit to reset"'
        : `the limit menu, on ${
          pointer ? JSON.stringify(MENU_POINTER.exec(pointer)![1]) : "no option"
        }`,
      ...(safe ? { keys: "enter" as const } : {}),
      ...(banner ? bannerFields(banner.text) : {}),
    };
  }
  if (asked) {
    return { ...base, idle: false, confident: true, state: "dangerous_prompt", rule: "a menu" };
  }
  for (const line of [...dialog, ...near]) {
    const prompt = firstMatch(DIALOGS, line);
    if (prompt) {
      return {
        ...base,
        idle: false,
        confident: true,
        state: "dangerous_prompt",
        rule: prompt.name,
      };
    }
  }
  // 2. Busy: the latest spinner or retry rows, or the footer.
  const rows = recent.slice(-2).filter((item) =>
    item.kind === "status" || item.kind === "result" || item.kind === "other" ||
    item.kind === "client"
  );
  for (const line of [...rows.map((item) => item.text), ...footer]) {
    const busy = firstMatch(BUSY, line);
    if (busy) return { ...base, state: "busy", rule: `busy (${busy.name})` };
  }
  // 3. The client's own auto-continue, armed (in the footer, or a notice not cancelled after
  // it): typing would cancel it, whatever else the screen shows. Then a usage limit.
  const banner = findBanner(screen);
  // The footer's notice stands for the latest turn: under a newer reply it is not this turn's.
  const replied = ["assistant", "tool"].includes(latestItem(items)?.kind ?? "");
  const footerBanner = replied ? undefined : footerLimitNotice(screen.footer);
  const texts = items.map((item) => item.text);
  const armedAt = texts.findLastIndex((t) => NATIVE_ARMED.test(t));
  const cancelledAt = texts.findLastIndex((t) => NATIVE_CANCELLED.test(t));
  const armed = footer.find((t) => NATIVE_ARMED.test(t)) ??
    // Only a new prompt, reply or tool call makes an armed notice the past; anything else after
    // it (results, notices, status rows) does not, so this errs towards "armed": not typing.
    (armedAt > cancelledAt && !items.slice(armedAt + 1).some((l) => NEWER.includes(l.kind))
      ? texts[armedAt]
      : undefined);
  const after = banner ? texts.slice(banner.index + 1) : [];
  const fields = banner
    ? bannerFields(banner.text, [...after, ...footer])
    : footerBanner
    ? bannerFields(footerBanner, footer)
    : armed
    ? bannerFields(armed)
    : undefined;
  if (armed) {
    const when = nativeTime(armed);
    return {
      ...base,
      ...fields,
      state: "native_autocontinue",
      rule: "the client will continue by itself",
      ...(when && !fields?.resetText ? { resetText: when } : {}),
    };
  }
  if (banner) return { ...base, ...fields, state: "usage_limit", rule: banner.rule, keys: "text" };
  if (footerBanner) {
    return {
      ...base,
      ...fields,
      state: "usage_limit",
      rule: "a usage limit in the footer",
      keys: "text",
    };
  }
  // 4. A permanent problem in one of the latest items.
  for (
    const item of items.slice(-3).filter((item) =>
      isTrusted(item, items) || item.kind === "assistant"
    )
  ) {
    const problem = firstMatch(PERMANENT_PROBLEMS, item.text);
    if (problem && (isTrusted(item, items) || CLIENT_NOTICE.test(item.text))) {
      return { ...base, state: "permanent", rule: problem.name, banner: item.text };
    }
  }
  // 5. A final API error as the latest item.
  const latest = latestItem(items);
  if (
    latest && isTrusted(latest, items) ||
    latest?.kind === "assistant" && API_ERROR_ITEM.test(latest.text)
  ) {
    const problem = firstMatch(PERMANENT_PROBLEMS, latest!.text);
    if (problem) return { ...base, state: "permanent", rule: problem.name, banner: latest!.text };
    const error = API_ERROR_ITEM.test(latest!.text)
      ? firstMatch(TRANSIENT_API_ERRORS, latest!.text) ?? namedApiError(latest!.text)
      : undefined;
    if (error) {
      const enter = PRESS_ENTER_TO_RETRY.test(latest!.text);
      return {
        ...base,
        state: "transient_api_error",
        rule: error.name,
        banner: latest!.text,
        keys: enter ? "enter" : "text",
      };
    }
  }
  return { ...base, state: "normal", rule: "nothing to act on" };
}

/**
 * An API error that names no status lifeline knows: one with a 4xx status other than 429 is a
 * request refused (a permanent problem, above); any other is retried like a server error.
 */
function namedApiError(text: string): NamedPattern | undefined {
  if (!/^API Error\b/i.test(text) || /^API Error:? \(?4\d\d\b/i.test(text)) return undefined;
  return { name: "API error", pattern: /^API Error\b/i };
}

/** The latest item that is not a companion row (turn durations, notices). */
function latestItem(items: readonly Item[]): Item | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    if (item.kind === "widget") continue;
    if (item.kind === "status" && !BUSY.some((b) => b.pattern.test(item.text))) continue;
    if (item.kind === "notice" && !LIMIT_BANNERS.some((p) => p.pattern.test(item.text))) continue;
    return item;
  }
  return undefined;
}

function bannerFields(text: string, after: readonly string[] = []): {
  banner: string;
  resetText?: string;
  limitKind: string;
} {
  const reset = resetTextOf(text) ??
    after.map(resetTextOf).find((r) => r !== undefined) ?? after.map(nativeTime).find(Boolean);
  return { banner: text, limitKind: limitKindOf(text), ...(reset ? { resetText: reset } : {}) };
}

/**
 * The current usage-limit banner: the latest trusted item that opens with a limit phrase and
 * names a reset (or is followed by the client's own auto-continue), with nothing newer than the
 * client's own companions after it.
 */
function findBanner(screen: Screen): { index: number; text: string; rule: string } | undefined {
  const { items } = screen;
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    if (!isTrusted(item, items)) continue;
    const limit = LIMIT_BANNERS.find((p) => p.pattern.test(item.text));
    if (!limit) continue;
    const later = items.slice(i + 1);
    const resets = RESET_MENTION.test(item.text) ||
      later.some((l) =>
        isTrusted(l, items) && (RESET_MENTION.test(l.text) || NATIVE_ARMED.test(l.text))
      );
    if (!resets && limit.needsReset) continue;
    // A user prompt or a new assistant item after it: an old banner, above newer conversation.
    if (!later.every((l) => isBannerCompanion(l, items))) return undefined;
    return { index: i, text: item.text, rule: `a usage-limit banner (${limit.name})` };
  }
  return undefined;
}

/**
 * The specification's last check before typing (spec/error-recovery.md §5.1): the last 5
 * non-blank lines must show no confirmation or destructive word. Returns the offending line.
 *
 * Two exemptions, each for text that cannot be a prompt the screen has turned into:
 * - Under a recognised input box, the footer's rows are the client's hints and the user's own
 *   status line (`⎇ fix/delete-button`): there only a bracketed `[y/N]` counts, and the client's
 *   prompts are caught whole by {@linkcode readScreen}. A branch named for a deletion must not
 *   stop every resume for good.
 * - The limit menu on its "Stop and wait" choice: the menu's own key hint (`Enter to confirm ·
 *   Esc to cancel`) names the key, and without the exemption that menu, which the client opens
 *   by itself at a weekly limit, could never be left.
 */
export function lastLinesRefusal(
  text: string,
  { safeLimitMenu = false }: { safeLimitMenu?: boolean } = {},
): string | undefined {
  const screen = parseScreen(text);
  const boxed = screen.inputBox === "rules" || screen.inputBox === "box";
  const footerFrom = boxed ? screen.lines.length - screen.footer.length : screen.lines.length;
  return screen.lines
    .map((line, at) => ({ line, at }))
    .filter(({ line }) => line.trim() !== "")
    .slice(-5)
    .find(({ line, at }) => {
      if (safeLimitMenu && MENU_KEY_HINT.test(line.trim())) return false;
      return (at >= footerFrom ? BRACKETED_CONFIRMATION : LAST_LINES_REFUSAL).test(line);
    })?.line;
}
