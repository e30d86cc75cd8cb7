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

/**
 * The fields that deactivate a loop state: `active=false`, the reason, and the time in the form
 * `last_checked_at` uses. Only these are rewritten; every other byte of the file is kept.
 */
export function deactivation(
  state: Record<string, unknown>,
  nowMs: number,
): { active: false; deactivation_reason: "stale"; deactivated_at: number | string } {
  const form = parseTimestamp(state.last_checked_at)?.form ?? "iso";
  return {
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

/** What is known about one claim lock. */
export interface ClaimEvidence {
  ageMs: number;
  owner: ClaimOwner;
  /** The recorded owner process ("not checked" when none is recorded). */
  ownerState: "alive" | "dead" | "reused" | "unknown" | "not checked";
  /** Whether a process holds a kernel lock on the file (`flock`, `lockf`); unknown if untold. */
  lockHeld: boolean | "unknown";
}

/** The decision for one claim lock. */
export type ClaimDecision =
  | {
    action: "keep";
    reason:
      | "fresh"
      | "lock held"
      | "owner alive"
      | "owner unknown"
      | "owner on another host"
      | "lock unknown";
  }
  | { action: "delete"; reason: "owner gone" | "no owner recorded" };

/**
 * A claim lock is deleted only when it is older than `staleMinutes` and either its recorded
 * owner is known to be dead (gone, or its pid now another program), or no owner is recorded and
 * no process holds a lock on it. Anything that cannot be checked keeps it: an owner on another
 * host, an owner whose liveness is unknown (no `ps`), a lock whose holders cannot be seen.
 */
export function decideClaim(
  claim: ClaimEvidence,
  { thisHost, staleMinutes }: { thisHost: string; staleMinutes: number },
): ClaimDecision {
  if (claim.ageMs <= staleMinutes * 60_000) return { action: "keep", reason: "fresh" };
  if (claim.lockHeld === true) return { action: "keep", reason: "lock held" };
  const { owner, ownerState } = claim;
  if (owner.pid === undefined) {
    return claim.lockHeld === false
      ? { action: "delete", reason: "no owner recorded" }
      : { action: "keep", reason: "lock unknown" };
  }
  if (owner.host && owner.host !== thisHost) {
    return { action: "keep", reason: "owner on another host" };
  }
  if (ownerState === "dead" || ownerState === "reused") {
    return { action: "delete", reason: "owner gone" };
  }
  return { action: "keep", reason: ownerState === "alive" ? "owner alive" : "owner unknown" };
}

/** What a plan says about itself. */
export interface PlanSummary {
  /** The text of its first heading, or null. */
  heading: string | null;
  /** Its checkboxes (`- [ ]`, `* [x]`, `1. [X]`), and how many of them are ticked. */
  boxes: number;
  ticked: number;
}

const CHECKBOX = /^\s*(?:[-*+]|\d{1,9}[.)])[ \t]+\[([ xX])\]/;
const ATX_HEADING = /^ {0,3}#{1,6}(?:[ \t]|$)/;

/** A heading line's text: the `#` marks and a closing run of them taken off, then trimmed. */
function headingText(line: string): string {
  let text = line.trimStart().replace(/^#{1,6}/, "").trim();
  let end = text.length;
  while (end > 0 && text[end - 1] === "#") end--;
  // A closing run counts only after a space ("# C#" is about C#).
  if (end === 0 || /[ \t]/.test(text[end - 1]!)) text = text.slice(0, end).trimEnd();
  return text;
}

/**
 * Reads a plan's first heading and its checkboxes, one line at a time. Plans are written by agents,
 * so nothing here backtracks: each pattern is anchored and no two quantifiers share characters.
 */
export function summarizePlan(text: string): PlanSummary {
  let heading: string | null = null;
  let boxes = 0;
  let ticked = 0;
  for (const line of text.split("\n")) {
    if (heading === null && ATX_HEADING.test(line)) heading = headingText(line) || null;
    const box = CHECKBOX.exec(line);
    if (box) {
      boxes++;
      if (box[1] !== " ") ticked++;
    }
  }
  return { heading, boxes, ticked };
}
