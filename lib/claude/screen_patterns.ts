/**
 * What the watcher recognises on an agent's screen, kept as data (reference §4 and §9). Every
 * pattern matches case-insensitively and, where the client prints a separator, accepts both `·`
 * (U+00B7, 2.1.x) and `∙` (U+2219, older).
 *
 * @module
 */

import type { NamedPattern } from "./patterns.ts";

const S = "[·∙]";

/**
 * A usage-limit line: the phrase starts the line (after the client's glyphs), so agent output that
 * merely mentions a limit, quotes a banner mid-sentence, or names a package does not match.
 * Each carries the limit's kind, which bounds how far ahead its reset can be.
 */
export const LIMIT_LINES: readonly (NamedPattern & { kind: string })[] = [
  {
    name: "You've hit your <name> limit",
    kind: "from-name",
    pattern:
      /^You've hit your (?:(5-hour|session|weekly|opus|sonnet|fable|usage credit) )?limit\b/i,
  },
  {
    name: "<name> limit reached",
    kind: "from-name",
    pattern: /^(5-hour|weekly|opus|sonnet) limit reached\b/i,
  },
  {
    name: "Claude usage limit reached",
    kind: "5-hour",
    pattern: /^Claude (?:AI )?usage limit reached\b/i,
  },
  { name: "Usage limit reached", kind: "5-hour", pattern: /^Usage limit reached\b/i },
  {
    name: "out of usage credits",
    kind: "usage credit",
    pattern: /^You're out of usage credits\b/i,
  },
];

/** A reset on the limit line or close below it. */
export const RESET_LINE = new RegExp(
  String.raw`\bresets?\b|limit will reset at|\|\d{10,13}\b`,
  "i",
);

/** The client's own auto-continue is armed (2.1.234+): typing now would cancel it. */
export const NATIVE_AUTOCONTINUE = new RegExp(
  String
    .raw`continuing automatically (?:at )?(.+?)\s*${S}\s*esc (?:or type )?to cancel|^Continuing shortly\b`,
  "i",
);

/** The user cancelled the client's auto-continue. */
export const AUTOCONTINUE_CANCELLED = /Automatic continue cancelled/i;

/** Lines that belong to a limit banner and do not count as newer conversation. */
export const LIMIT_CONTEXT: readonly RegExp[] = [
  /^\/upgrade to increase your usage limit/i,
  /^Usage limit reached\b/i,
  /^Automatic continue cancelled/i,
  /^Continuing (?:automatically|shortly)/i,
  /limit resets\b/i,
  /^What do you want to do\?/i,
];

/** The agent is working: never type (reference §4b, §4e). */
export const BUSY: readonly NamedPattern[] = [
  { name: "esc to interrupt", pattern: /esc to interrupt/i },
  {
    name: "retrying",
    pattern: new RegExp(String.raw`${S}\s*(?:retrying|Retrying) (?:in\b|…)`, "i"),
  },
  { name: "retry attempt", pattern: /\battempt \d+\/\d+\b/i },
  { name: "old retry notice", pattern: /Retrying in \d+ seconds?…/i },
  {
    name: "waiting for the API",
    pattern: /Waiting for API response|No response from the API after/i,
  },
];

/** Permission and confirmation prompts, and dialogs: a key pressed here does something. */
export const DANGEROUS_PROMPTS: readonly NamedPattern[] = [
  { name: "[y/N] confirmation", pattern: /\[(?:y\/n|yes\/no)\]/i },
  {
    name: "permission question",
    pattern: /Do you want to (?:proceed|make this edit|create|overwrite|allow)\b/i,
  },
  {
    name: "trust dialog",
    pattern: /Quick safety check|Yes, I trust this folder|Do you trust the files/i,
  },
  {
    name: "auto-mode dialog",
    pattern: /Enter to stay in auto mode|Auto mode can't check actions/i,
  },
  { name: "confirm to continue", pattern: /Enter to confirm|Esc to cancel · Tab to amend/i },
  // A numbered option with the pointer: `❯ 1. Yes` (or `>` in older builds).
  { name: "option menu", pattern: /^\s*[❯>]\s*\d+\.\s+\S/ },
];

/** The limit menu (older builds ask when a limit is hit). */
export const LIMIT_MENU = /What do you want to do\?/i;

/** The one menu choice that is safe to take with Enter. */
export const SAFE_MENU_CHOICE = /^\s*[❯>]\s*(?:\d+\.\s*)?Stop and wait for limit to reset/i;

/** The highlighted option of a menu. */
export const MENU_POINTER = /^\s*[❯>]\s*(?:\d+\.\s*)?(\S.*)$/;

/** Trouble no waiting fixes: authentication, billing, the organisation (never type). */
export const PERMANENT_PROBLEMS: readonly NamedPattern[] = [
  {
    name: "login needed",
    pattern:
      /Please run \/login|Failed to authenticate|Invalid API key|OAuth token (?:has )?expired/i,
  },
  { name: "billing", pattern: /Credit balance is too low|billing_error/i },
  {
    name: "organisation paused",
    pattern: /Usage is paused for your organization|Your org is out of usage/i,
  },
  { name: "org not allowed", pattern: /organization (?:is )?not allowed|account (?:is )?on hold/i },
  { name: "prompt too long", pattern: /Prompt is too long/i },
  { name: "cannot reach Anthropic", pattern: /Unable to connect to Anthropic services/i },
];

/** A final API error the agent can be resumed from after a backoff (reference §4c, §9). */
export const TRANSIENT_API_ERRORS: readonly NamedPattern[] = [
  {
    name: "429 rate limited",
    pattern: /API Error: Request rejected \(429\)|Server is temporarily limiting requests/i,
  },
  {
    name: "529 overloaded",
    pattern: /API Error: Repeated 529 Overloaded|API Error: 529\b|Overloaded/i,
  },
  { name: "server error", pattern: /API Error: 5\d\d\b/i },
  {
    name: "connection lost",
    pattern: /Connection to the API was lost|Unable to connect to API|Request timed out/i,
  },
  { name: "high load", pattern: /is experiencing high load/i },
  { name: "rate limited, press Enter", pattern: /Rate limited\. Press Enter to retry/i },
];

/** The spec's rule for the last 5 lines before typing (§5.1), with both y/N spellings. */
export const LAST_LINES_REFUSAL =
  /\[y\/N\]|\[Y\/n\]|\[yes\/no\]|confirm|delete|overwrite|force push/i;

/** Placeholders the client shows in an empty input box. */
export const INPUT_PLACEHOLDERS: readonly RegExp[] = [
  /^Resend your message to try again$/i,
  /^Try "/,
];
