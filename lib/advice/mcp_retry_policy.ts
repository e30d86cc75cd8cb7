/**
 * MCP reconnection advice (spec/error-recovery.md §5.4): exponential backoff, 1, 2, 4, 8, 16 s for
 * the first five failures, then fallback advice. Claude Code has no API to restart an MCP server,
 * so lifeline can only advise. Pure: `decideMcpFailure(state, event, { now, random, ...settings })`.
 *
 * @module
 */

/** `sessions/<id>/mcp-retry-<tool>.json`. Times are epoch seconds. */
export interface McpRetryState {
  attempt: number;
  last_attempt_ts: number;
  /** When a retry is due: the backoff with up to `jitter` of it taken off at random. */
  next_retry_at: number;
}

/** What to tell the agent after an MCP connection failure (rendered by `tool_fallback.ts`). */
export type McpAdvice =
  | { kind: "retry"; attempt: number; maxAttempts: number; waitSeconds: number; reason: string }
  | { kind: "fallback"; attempt: number; maxAttempts: number; reason: string };

/** What the policy asks for. */
export type McpAction = { kind: "advise"; advice: McpAdvice };

/** The backoff before retry `attempt` (1-based): `base * 2^(attempt-1)`. */
export function backoffSeconds(attempt: number, baseSeconds: number): number {
  return baseSeconds * 2 ** (attempt - 1);
}

/**
 * The state and advice after one more connection failure (`reason`: which error pattern
 * matched). `random` in [0, 1) picks the jitter, so clients that failed together do not all
 * retry at the same instant.
 */
export function decideMcpFailure(
  state: McpRetryState | undefined,
  { reason }: { reason: string },
  { now, random, baseSeconds, maxAttempts, jitter }: {
    now: number;
    random: () => number;
    baseSeconds: number;
    maxAttempts: number;
    jitter: number;
  },
): { state: McpRetryState; actions: McpAction[] } {
  const attempt = (state?.attempt ?? 0) + 1;
  const seconds = now / 1000;
  if (attempt > maxAttempts) {
    return {
      state: { attempt, last_attempt_ts: Math.floor(seconds), next_retry_at: Math.floor(seconds) },
      actions: [{ kind: "advise", advice: { kind: "fallback", attempt, maxAttempts, reason } }],
    };
  }
  const waitSeconds = backoffSeconds(attempt, baseSeconds);
  const jittered = waitSeconds * (1 - jitter * random());
  return {
    state: {
      attempt,
      last_attempt_ts: Math.floor(seconds),
      next_retry_at: Math.round((seconds + jittered) * 1000) / 1000,
    },
    actions: [{
      kind: "advise",
      advice: { kind: "retry", attempt, maxAttempts, waitSeconds, reason },
    }],
  };
}
