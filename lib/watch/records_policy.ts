/**
 * What a session's own records say happened to it, read before its screen (reference §5, §9):
 * the StopFailure that `hook track` recorded, and the transcript's tail (API-error rows with
 * `rateLimits.resetsAt`, the client's informational rows, and whether newer conversation came
 * after the error). Pure: `readTranscriptTail` takes lines, `recordSignal` takes both readings.
 *
 * @module
 */

import { parseResetPhrase, resetWindow, resolveReset } from "../claude/reset_time.ts";
import {
  LIMIT_BANNERS,
  LIMIT_NAMES,
  NATIVE_ARMED,
  NATIVE_CANCELLED,
} from "../claude/screen_patterns.ts";

/** What `hook track` keeps of a StopFailure (`sessions/<id>/stop-failure.json`). */
export interface StopFailureRecord {
  ts: string;
  error: string;
  message?: string;
}

/** The last API error a transcript shows, and what came after it. */
export interface TranscriptTail {
  lastError: {
    at: number;
    error: string;
    status: number | null;
    text: string;
    /** Epoch ms from `rateLimits.resetsAt` / `rate_limit_info.resetsAt`, when the row has it. */
    resetsAt: number | null;
    limitType: string | null;
  } | null;
  /** A user prompt or a real assistant reply after the last error: the episode is over. */
  newerActivityAt: number | null;
  /** The client's own auto-continue after the last error: armed, cancelled, or not seen. */
  native: "armed" | "cancelled" | null;
}

/** What the records say, for the watcher. */
export type RecordSignal =
  | {
    kind: "limited";
    at: number;
    text: string;
    limitKind: string;
    /** The reset instant (epoch ms), or null when the records do not say. */
    resetAt: number | null;
    native: "armed" | "cancelled" | null;
    /** The transcript was read and shows nothing newer: the records alone can be acted on. */
    confirmed: boolean;
  }
  | { kind: "transient"; at: number; text: string; error: string; confirmed: boolean }
  | { kind: "permanent"; at: number; text: string; error: string; confirmed: boolean }
  | { kind: "working"; at: number }
  | { kind: "none" };

/** StopFailure `error` values no waiting or retrying fixes (reference §1, §4c). */
const PERMANENT_ERRORS = new Set([
  "authentication_failed",
  "billing_error",
  "oauth_org_not_allowed",
  "account_on_hold",
  "verification_required",
  "cloud_credential_error",
  "model_not_found",
]);
/** StopFailure `error` values a later retry can fix. */
const TRANSIENT_ERRORS = new Set(["server_error", "overloaded", "rate_limit"]);

const ROW = /"type"\s*:\s*"(?:user|assistant|system)"/;

// deno-lint-ignore no-explicit-any
type Row = any;

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => (b && typeof b.text === "string" ? b.text : "")).join("\n");
}

function epochMs(value: unknown): number | null {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) return null;
  return value < 1e12 ? value * 1000 : value;
}

/** Reads the lines of a transcript's tail (torn and unknown rows are skipped). */
export function readTranscriptTail(lines: readonly string[]): TranscriptTail {
  const tail: TranscriptTail = { lastError: null, newerActivityAt: null, native: null };
  let retryReset: { resetsAt: number | null; limitType: string | null } | null = null;
  for (const line of lines) {
    if (!ROW.test(line)) continue;
    let row: Row;
    try {
      row = JSON.parse(line);
    } catch {
      continue;
    }
    const at = typeof row?.timestamp === "string" ? Date.parse(row.timestamp) : NaN;
    if (Number.isNaN(at)) continue;
    if (row.type === "system") {
      if (row.subtype === "api_error") {
        const limits = row.error?.rateLimits;
        retryReset = {
          resetsAt: epochMs(limits?.resetsAt),
          limitType: typeof limits?.rateLimitType === "string" ? limits.rateLimitType : null,
        };
      } else if (row.subtype === "informational" && tail.lastError) {
        const content = typeof row.content === "string" ? row.content : "";
        if (NATIVE_ARMED.test(content)) tail.native = "armed";
        else if (NATIVE_CANCELLED.test(content)) tail.native = "cancelled";
      }
      continue;
    }
    if (row.type === "assistant" && row.isApiErrorMessage === true) {
      const info = row.apiErrorParams?.rate_limit_info ?? row.quotaLimits ?? null;
      tail.lastError = {
        at,
        error: typeof row.error === "string" ? row.error : "unknown",
        status: typeof row.apiErrorStatus === "number" ? row.apiErrorStatus : null,
        text: textOf(row.message?.content).slice(0, 2000),
        resetsAt: epochMs(info?.resetsAt) ?? retryReset?.resetsAt ?? null,
        limitType: typeof info?.rateLimitType === "string"
          ? info.rateLimitType
          : retryReset?.limitType ?? null,
      };
      tail.newerActivityAt = null;
      tail.native = null;
      retryReset = null;
      continue;
    }
    if (!tail.lastError) continue;
    // Something the user or the model said after the error. Meta rows (hook context, command
    // output) and tool results are the client's own bookkeeping, not a new turn.
    if (row.isMeta || row.isCompactSummary) continue;
    const content = row.message?.content;
    const isToolResult = Array.isArray(content) && content.some((b) => b?.type === "tool_result");
    if (row.type === "user" && !isToolResult && textOf(content).trim() !== "") {
      tail.newerActivityAt = at;
    } else if (row.type === "assistant" && row.message?.model !== "<synthetic>") {
      tail.newerActivityAt = at;
    }
  }
  return tail;
}

function limitKindOf(text: string, limitType: string | null): string {
  if (limitType) {
    if (/five_hour|session/i.test(limitType)) return "5-hour";
    if (/opus/i.test(limitType)) return "opus";
    if (/sonnet/i.test(limitType)) return "sonnet";
    if (/seven_day/i.test(limitType)) return "weekly";
    if (/overage|credit/i.test(limitType)) return "usage credit";
  }
  return LIMIT_NAMES.exec(text)?.[1]?.toLowerCase() ?? "unnamed";
}

function isUsageLimitText(text: string): boolean {
  return LIMIT_BANNERS.some((p) => p.pattern.test(text.trim()));
}

/**
 * What the records say: the newest of the recorded StopFailure and the transcript's last error,
 * unless newer conversation came after it. A StopFailure newer than the transcript's view is
 * believed: the transcript is written asynchronously and lags (reference §5).
 */
export function recordSignal(
  stopFailure: StopFailureRecord | null,
  tail: TranscriptTail | null,
  { localZone }: { localZone: string },
): RecordSignal {
  const recorded = stopFailure && !Number.isNaN(Date.parse(stopFailure.ts))
    ? { at: Date.parse(stopFailure.ts), error: stopFailure.error, text: stopFailure.message ?? "" }
    : null;
  const fromTail = tail?.lastError ?? null;
  const latest = fromTail && (!recorded || fromTail.at >= recorded.at - 5_000)
    ? fromTail
    : recorded
    ? { ...recorded, status: null, resetsAt: null, limitType: null }
    : null;
  if (!latest) {
    return tail?.newerActivityAt ? { kind: "working", at: tail.newerActivityAt } : { kind: "none" };
  }
  if (tail?.newerActivityAt && tail.newerActivityAt > latest.at) {
    return { kind: "working", at: tail.newerActivityAt };
  }
  const { at, error, text } = latest;
  // A StopFailure alone may be stale (a reply came after it that only the transcript shows).
  const confirmed = tail !== null;
  if (error === "rate_limit" && (latest.resetsAt !== null || isUsageLimitText(text))) {
    const limitKind = limitKindOf(text, latest.limitType);
    const phrase = latest.resetsAt === null ? parseResetPhrase(text) : null;
    const resetAt = latest.resetsAt ??
      (phrase
        ? resolveReset(phrase, { anchorMs: at, localZone, window: resetWindow(limitKind) })
        : null);
    const native = fromTail === latest ? tail!.native : null;
    return { kind: "limited", at, text, limitKind, resetAt, native, confirmed };
  }
  if (PERMANENT_ERRORS.has(error) || /prompt is too long/i.test(text)) {
    return { kind: "permanent", at, text, error, confirmed };
  }
  if (TRANSIENT_ERRORS.has(error) || /^API Error\b/i.test(text)) {
    return { kind: "transient", at, text, error, confirmed };
  }
  return { kind: "none" };
}
