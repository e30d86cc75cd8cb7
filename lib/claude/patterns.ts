/**
 * Text patterns lifeline recognises, kept as data. Every pattern matches case-insensitively and,
 * where the client prints a separator, accepts both `·` (U+00B7, 2.1.x) and `∙` (U+2219, older).
 * Sources: reference/claude-code.md §4 (client strings) and spec/error-recovery.md §5.4–5.5.
 *
 * The text these patterns see comes from tools and users, so they must never backtrack for long:
 * each is linear (no nested or adjacent unbounded quantifiers over the same characters;
 * tests/pattern_budget_test.ts runs every export on 1 MB of adversarial text), and
 * {@linkcode firstMatch} applies them to a bounded head and tail of the text only.
 *
 * @module
 */

/** A named pattern, so matches can say which rule fired. */
export interface NamedPattern {
  name: string;
  pattern: RegExp;
}

/** How much of each end of a text the patterns look at. */
export const TEXT_END_CHARS = 4096;

/**
 * `text` when it is short; else its first and last {@linkcode TEXT_END_CHARS} characters, joined
 * by a newline (so no match spans the cut). Errors and banners say what matters at either end.
 */
export function textEnds(text: string): string {
  if (text.length <= 2 * TEXT_END_CHARS) return text;
  return `${text.slice(0, TEXT_END_CHARS)}\n${text.slice(-TEXT_END_CHARS)}`;
}

/** The first pattern that matches the ends of `text` (see {@linkcode textEnds}), or undefined. */
export function firstMatch(
  patterns: readonly NamedPattern[],
  text: string,
): NamedPattern | undefined {
  const ends = textEnds(text);
  return patterns.find((p) => p.pattern.test(ends));
}

/**
 * A case-insensitive pattern for `words` in this order on one line, with anything between them,
 * that stays linear: each word is looked for from the line's start up to its first occurrence
 * (a tempered `(?:(?!word).)*`), so no two quantifiers compete for the same characters. The
 * naive `a.*b.*c` takes minutes on a long line of `a b a b …`.
 */
function inOrder(...words: string[]): RegExp {
  return new RegExp(`^${words.map((word) => `(?:(?!${word})[^\n])*${word}`).join("")}`, "im");
}

/**
 * Connection errors of MCP tools: the specification's list (ECONNREFUSED, ECONNRESET, EPIPE,
 * "MCP … disconnect", "transport … closed", "server … not running") plus the client's own strings.
 */
export const MCP_CONNECTION_ERRORS: readonly NamedPattern[] = [
  { name: "ECONNREFUSED", pattern: /ECONNREFUSED/i },
  { name: "ECONNRESET", pattern: /ECONNRESET/i },
  { name: "EPIPE", pattern: /\bEPIPE\b/i },
  { name: "ETIMEDOUT", pattern: /\bETIMEDOUT\b/i },
  { name: "MCP disconnect", pattern: inOrder("MCP", "disconnect") },
  { name: "transport closed", pattern: inOrder("transport", "closed") },
  { name: "server not running", pattern: inOrder("server", "not", "running") },
  { name: "not connected", pattern: /not connected/i },
  { name: "reconnect failed", pattern: /Failed to reconnect to/i },
  { name: "connection closed", pattern: /connection (?:closed|lost|refused)/i },
  { name: "MCP tool call failed", pattern: /MCP server tool call '[^'\n]*' failed/i },
  { name: "MCP servers failed to connect", pattern: /MCP servers? failed to connect/i },
];

/** StopFailure `error` values and how the model-fallback policy treats them (reference §1, §9). */
export const API_ERROR_KINDS = {
  /** Capacity or server trouble: counts towards a stronger model. 2.1.328 reports 529 as this. */
  counted: ["overloaded", "server_error"],
  /** Wait for the reset; never switch model for it. */
  rateLimit: ["rate_limit"],
  /** No retry helps; the user has to act. */
  permanent: [
    "authentication_failed",
    "billing_error",
    "oauth_org_not_allowed",
    "account_on_hold",
    "verification_required",
  ],
} as const;

/** An `invalid_request` with this text is permanent too: retrying the same prompt cannot help. */
export const PROMPT_TOO_LONG = /prompt is too long/i;

/**
 * The reset time in a limit message, e.g. "resets 5:51pm (UTC)" or "resets Nov 20, 3pm": from its
 * first non-space character to a separator or the line's end. Trailing spaces are the caller's to
 * trim: a lazy group followed by `\s*` would compete with it for every space.
 */
export const RESET_PHRASE = /resets?\s+(?:at\s+)?([^\s·∙][^·∙\n]*)/i;
