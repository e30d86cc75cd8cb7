/**
 * Text patterns lifeline recognises, kept as data. Every pattern matches case-insensitively and,
 * where the client prints a separator, accepts both `·` (U+00B7, 2.1.x) and `∙` (U+2219, older).
 * Sources: reference/claude-code.md §4 (client strings) and spec/error-recovery.md §5.4–5.5.
 *
 * @module
 */

/** A named pattern, so matches can say which rule fired. */
export interface NamedPattern {
  name: string;
  pattern: RegExp;
}

/** The first pattern that matches `text`, or undefined. */
export function firstMatch(
  patterns: readonly NamedPattern[],
  text: string,
): NamedPattern | undefined {
  return patterns.find((p) => p.pattern.test(text));
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
  { name: "MCP disconnect", pattern: /MCP.*disconnect/i },
  { name: "transport closed", pattern: /transport.*closed/i },
  { name: "server not running", pattern: /server.*not.*running/i },
  { name: "not connected", pattern: /not connected/i },
  { name: "reconnect failed", pattern: /Failed to reconnect to/i },
  { name: "connection closed", pattern: /connection (?:closed|lost|refused)/i },
  { name: "MCP tool call failed", pattern: /MCP server tool call '.*' failed/i },
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

/** The reset time in a limit message, e.g. "resets 5:51pm (UTC)" or "resets Nov 20, 3pm". */
export const RESET_PHRASE = /resets?\s+(?:at\s+)?([^·∙\n]+?)\s*(?:[·∙]|$)/i;
