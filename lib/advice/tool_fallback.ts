/**
 * What `hook track` does when a tool fails (spec/error-recovery.md §5.4–5.5): count the tool's
 * consecutive failures, advise its fallback at the threshold, and give MCP connection errors
 * backoff advice, then fallback advice. Loaded only on PostToolUseFailure, to keep the common
 * success path of the hook small.
 *
 * @module
 */

import type * as FallbackMap from "./fallback_map.ts";
import type { HookRequest, InputOf } from "../claude/hook_io.ts";
import type * as Patterns from "../claude/patterns.ts";
import { importLater } from "../core/lazy.ts";
import { sessionPaths } from "../state/layout.ts";
import type * as McpRetryPolicy from "./mcp_retry_policy.ts";
import type { McpAdvice, McpRetryState } from "./mcp_retry_policy.ts";
import type * as RecoveryLog from "../state/recovery_log.ts";
import { jsonCodec, numberCodec, updateState } from "../state/store.ts";

// Most failures are of built-in tools and earn no advice yet: what MCP errors, fallbacks and the
// log need is loaded only when they come up.
const fallbackMap = () => importLater<typeof FallbackMap>("./fallback_map.ts", import.meta.url);

const mcpRetryCodec = jsonCodec<McpRetryState>((value) => {
  const v = value as Partial<McpRetryState>;
  if (typeof v.attempt !== "number" || typeof v.last_attempt_ts !== "number") {
    throw new Error("not an MCP retry state");
  }
  return {
    attempt: v.attempt,
    last_attempt_ts: v.last_attempt_ts,
    next_retry_at: v.next_retry_at ?? 0,
  };
});

/** An MCP tool: `mcp__<server>__<tool>`, or an input that names its server. */
export function mcpServerOf(
  input: { tool_name: string; mcp_server?: { name: string } | undefined },
) {
  if (input.mcp_server?.name) return input.mcp_server.name;
  const match = /^mcp__(.+?)__/.exec(input.tool_name);
  return match ? match[1]! : null;
}

/** The MCP connection error a tool's error names, if any. */
async function connectionError(error: string) {
  const { firstMatch, MCP_CONNECTION_ERRORS } = await importLater<typeof Patterns>(
    "../claude/patterns.ts",
    import.meta.url,
  );
  return firstMatch(MCP_CONNECTION_ERRORS, error);
}

function fallbackText(entry: { fallback: string; limits: string }): string {
  return entry.limits ? `${entry.fallback} (what it cannot do: ${entry.limits})` : entry.fallback;
}

async function toolFallbackAdvice(root: string, tool: string, count: number): Promise<string> {
  const { BUILTIN_FALLBACKS, findFallback, readFallbackMap } = await fallbackMap();
  const entry = findFallback(await readFallbackMap(root), tool) ??
    findFallback(BUILTIN_FALLBACKS, tool);
  const head = `[TOOL FALLBACK] ${tool} failed ${count} times in a row.`;
  return entry
    ? `${head} Stop repeating the same call; use ${fallbackText(entry)}.`
    : `${head} Stop repeating the same call: change the approach or use another tool ` +
      "(.working-state/fallback-tools.md can name a fallback for it).";
}

async function mcpAdvice(
  root: string,
  tool: string,
  server: string,
  advice: McpAdvice,
): Promise<string> {
  const reason = advice.reason;
  if (advice.kind === "retry") {
    return `[MCP RETRY] ${tool} could not reach its server (${reason}). Wait ${advice.waitSeconds}s, ` +
      `then retry once (attempt ${advice.attempt}/${advice.maxAttempts}).`;
  }
  const head = `[MCP FALLBACK] ${tool} failed ${advice.attempt} times in a row (${reason}).`;
  const { findFallback, readFallbackMap } = await fallbackMap();
  const entry = findFallback(await readFallbackMap(root), tool);
  return entry
    ? `${head} Use ${fallbackText(entry)} instead. The server can be reconnected with /mcp.`
    : `${head} No fallback is mapped for it: ask the user to reconnect the MCP server "${server}" ` +
      "with /mcp, and do this step another way meanwhile.";
}

/**
 * Counts a failed tool call and returns the advice it earns (often none). The configuration is
 * read while the count is written (the write waits for the disk), and the lock's wait only when
 * the lock is taken.
 */
export async function onToolFailure(
  request: HookRequest,
  input: InputOf<"PostToolUseFailure">,
): Promise<string[]> {
  // The user pressing Esc is not the tool failing.
  if (input.is_interrupt) return [];
  const { root, ctx } = request;
  const session = input.session_id;
  const tool = input.tool_name;
  const paths = sessionPaths(root, session);
  const now = ctx.now();
  const waitMs = request.lockWaitMs;
  const config = request.config();
  const advice: string[] = [];
  const actions = [];

  const server = mcpServerOf(input);
  const connection = server ? await connectionError(input.error) : undefined;
  if (server && connection) {
    const { decideMcpFailure } = await importLater<typeof McpRetryPolicy>(
      "./mcp_retry_policy.ts",
      import.meta.url,
    );
    const mcpSettings = (await config).mcp;
    let decided!: ReturnType<typeof McpRetryPolicy.decideMcpFailure>;
    await updateState(paths.mcpRetry(tool), mcpRetryCodec, (current) => {
      decided = decideMcpFailure(current, { reason: connection.name }, {
        now,
        random: ctx.random,
        ...mcpSettings,
      });
      return decided.state;
    }, { root, waitMs, now });
    for (const { advice: mcp } of decided.actions) {
      const text = await mcpAdvice(root, tool, server, mcp);
      advice.push(text);
      actions.push({ kind: mcp.kind === "retry" ? "mcp_retry" : "mcp_fallback", text });
    }
  }

  const [{ value: count = 0 }, { toolFallback }] = await Promise.all([
    updateState(paths.failCount(tool), numberCodec, (current) => (current ?? 0) + 1, {
      root,
      waitMs,
      now,
    }),
    config,
  ]);
  // Once per crossing, not on every failure after it; MCP connection trouble has its own advice.
  if (count === toolFallback.threshold && !connection) {
    const text = await toolFallbackAdvice(root, tool, count);
    advice.push(text);
    actions.push({ kind: "tool_fallback", text });
  }

  if (actions.length > 0) {
    const { logRecovery } = await importLater<typeof RecoveryLog>(
      "../state/recovery_log.ts",
      import.meta.url,
    );
    await logRecovery(
      root,
      ...actions.map(({ kind, text }) => ({
        ts: new Date(now).toISOString(),
        session,
        kind,
        action: "advise",
        target: tool,
        result: text,
      })),
    );
  }
  return advice;
}
