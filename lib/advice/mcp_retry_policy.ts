/**
 * MCP reconnection advice (spec/error-recovery.md §5.4): exponential backoff, 1, 2, 4, 8, 16 s for
 * the first five failures, then fallback advice. Claude Code has no API to restart an MCP server,
 * so lifeline can only advise. A pure function of (state, event, now).
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

/** What to tell the agent after an MCP connection failure. */
export type McpAdvice =
  | { kind: "retry"; attempt: number; maxAttempts: number; waitSeconds: number }
  | { kind: "fallback"; attempt: number; maxAttempts: number };

/** The backoff before retry `attempt` (1-based): `base * 2^(attempt-1)`. */
export function backoffSeconds(attempt: number, baseSeconds: number): number {
  return baseSeconds * 2 ** (attempt - 1);
}

/**
 * The state and advice after one more connection failure. `random` in [0, 1) picks the jitter, so
 * clients that failed together do not all retry at the same instant.
 */
export function onMcpFailure(
  state: McpRetryState | undefined,
  nowMs: number,
  config: { baseSeconds: number; maxAttempts: number; jitter: number },
  random: number,
): { state: McpRetryState; advice: McpAdvice } {
  const attempt = (state?.attempt ?? 0) + 1;
  const now = nowMs / 1000;
  if (attempt > config.maxAttempts) {
    return {
      state: { attempt, last_attempt_ts: Math.floor(now), next_retry_at: Math.floor(now) },
      advice: { kind: "fallback", attempt, maxAttempts: config.maxAttempts },
    };
  }
  const waitSeconds = backoffSeconds(attempt, config.baseSeconds);
  const jittered = waitSeconds * (1 - config.jitter * random);
  return {
    state: {
      attempt,
      last_attempt_ts: Math.floor(now),
      next_retry_at: Math.round((now + jittered) * 1000) / 1000,
    },
    advice: { kind: "retry", attempt, maxAttempts: config.maxAttempts, waitSeconds },
  };
}
