/**
 * What to do with state a crashed session left behind (spec/error-recovery.md §5.2): a loop state
 * still marked active, a claim lock nobody released. Pure functions of (state, now).
 *
 * @module
 */

/** A time in one of the forms loop tools write, with the form kept for writing back. */
export interface Timestamp {
  ms: number;
  form: "seconds" | "milliseconds" | "iso";
}

/** Reads epoch seconds, epoch milliseconds or an ISO time (numbers may be strings). */
export function parseTimestamp(value: unknown): Timestamp | null {
  if (typeof value === "number" && Number.isFinite(value) && value > 0) {
    // 1e11 s is the year 5138; 1e11 ms is 1973. Anything recent is unambiguous.
    return value < 1e11
      ? { ms: value * 1000, form: "seconds" }
      : { ms: value, form: "milliseconds" };
  }
  if (typeof value === "string" && value.trim() !== "") {
    const text = value.trim();
    if (/^\d+(\.\d+)?$/.test(text)) return parseTimestamp(Number(text));
    const ms = Date.parse(text);
    if (!Number.isNaN(ms)) return { ms, form: "iso" };
  }
  return null;
}

/** `ms` written in `form`. */
export function formatTimestamp(ms: number, form: Timestamp["form"]): number | string {
  if (form === "seconds") return Math.floor(ms / 1000);
  if (form === "milliseconds") return ms;
  return new Date(ms).toISOString();
}

/** The decision for one `ralph.json`. */
export type LoopDecision =
  | { action: "keep"; reason: "inactive" | "fresh" }
  | { action: "deactivate"; ageSeconds: number; basis: "last_checked_at" | "file time" };

/**
 * A loop state is stale when it is active and was last checked more than `staleSeconds` ago.
 * Without a readable `last_checked_at`, the file's modification time stands in for it.
 */
export function decideLoopState(
  state: Record<string, unknown>,
  fileMtimeMs: number | null,
  nowMs: number,
  staleSeconds: number,
): LoopDecision {
  if (state.active !== true) return { action: "keep", reason: "inactive" };
  const checked = parseTimestamp(state.last_checked_at);
  const basisMs = checked?.ms ?? fileMtimeMs;
  if (basisMs === null) return { action: "keep", reason: "fresh" };
  const ageSeconds = Math.floor((nowMs - basisMs) / 1000);
  if (ageSeconds <= staleSeconds) return { action: "keep", reason: "fresh" };
  return { action: "deactivate", ageSeconds, basis: checked ? "last_checked_at" : "file time" };
}

/** The loop state with `active=false`; every other field is kept as it was. */
export function deactivated(
  state: Record<string, unknown>,
  nowMs: number,
): Record<string, unknown> {
  const form = parseTimestamp(state.last_checked_at)?.form ?? "iso";
  return {
    ...state,
    active: false,
    deactivation_reason: "stale",
    deactivated_at: formatTimestamp(nowMs, form),
  };
}

/** Who holds a claim lock, as far as its content says. */
export interface ClaimOwner {
  pid?: number;
  host?: string;
}

/**
 * Reads a claim lock's owner from its content: JSON (`pid`/`owner_pid`, `host`/`hostname`),
 * `pid=123` or `pid: 123` lines, or a bare `123` / `123@host`. Unknown content means no owner.
 */
export function parseClaimOwner(text: string): ClaimOwner {
  const trimmed = text.trim();
  try {
    const json = JSON.parse(trimmed);
    if (json && typeof json === "object" && !Array.isArray(json)) {
      const pid = Number(json.pid ?? json.owner_pid ?? json.ownerPid);
      const host = json.host ?? json.hostname;
      return {
        ...(Number.isSafeInteger(pid) && pid > 0 ? { pid } : {}),
        ...(typeof host === "string" && host ? { host } : {}),
      };
    }
  } catch {
    // Not JSON; try the plain forms.
  }
  const bare = /^(\d+)(?:@(\S+))?$/.exec(trimmed);
  if (bare) return { pid: Number(bare[1]), ...(bare[2] ? { host: bare[2] } : {}) };
  const pid = /\bpid\s*[=:]\s*(\d+)/i.exec(trimmed);
  const host = /\bhost(?:name)?\s*[=:]\s*(\S+)/i.exec(trimmed);
  return {
    ...(pid ? { pid: Number(pid[1]) } : {}),
    ...(host ? { host: host[1]! } : {}),
  };
}

/** The decision for one claim lock. */
export type ClaimDecision =
  | { action: "keep"; reason: "fresh" | "owner alive" | "owner on another host" }
  | { action: "delete"; reason: "owner gone" | "no owner recorded" };

/**
 * A claim lock older than `staleMinutes` is deleted, unless its recorded owner is still running
 * on this host (then it is kept and said so). An owner on another host cannot be checked: kept.
 */
export function decideClaim(
  ageMs: number,
  owner: ClaimOwner,
  ownerState: "alive" | "dead" | "reused" | "unknown" | "not checked",
  thisHost: string,
  staleMinutes: number,
): ClaimDecision {
  if (ageMs <= staleMinutes * 60_000) return { action: "keep", reason: "fresh" };
  if (owner.pid === undefined) return { action: "delete", reason: "no owner recorded" };
  if (owner.host && owner.host !== thisHost) {
    return { action: "keep", reason: "owner on another host" };
  }
  return ownerState === "alive"
    ? { action: "keep", reason: "owner alive" }
    : { action: "delete", reason: "owner gone" };
}
