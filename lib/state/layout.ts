/**
 * The state layout, in one place. Project state is compatible with the specifications lifeline
 * implements (DESIGN §4); lifeline's own state (logs of its own failures, watcher and daemon
 * locks) lives in a per-user state directory. Names become path segments only through
 * {@linkcode validateName}.
 *
 * @module
 */

import { UsageError } from "../core/cli.ts";
import { absolutePath, isAbsolutePath, joinPath } from "../core/path.ts";

/** What a validated name is used as, for error messages. */
export type NameKind = "session id" | "tool name" | "task id" | "skill name";

/** Longest accepted id or tool name; a file name built from one stays well under 255 bytes. */
export const MAX_NAME_LENGTH = 200;

const SAFE_NAME = /^[A-Za-z0-9._-]+$/;

/** A name that must not become part of a path. */
export class InvalidNameError extends Error {
  override name = "InvalidNameError";
  constructor(readonly kind: NameKind, readonly value: unknown, reason: string) {
    super(`Invalid ${kind} ${JSON.stringify(value)}: ${reason}`);
  }
}

/**
 * Returns `value` when it is safe as one path segment: letters, digits, `.`, `_` and `-`, not `.`
 * or `..`, at most {@linkcode MAX_NAME_LENGTH} characters. Throws {@linkcode InvalidNameError}.
 */
export function validateName(kind: NameKind, value: unknown): string {
  if (typeof value !== "string") throw new InvalidNameError(kind, value, "not a string");
  if (value.length === 0) throw new InvalidNameError(kind, value, "it is empty");
  if (value.length > MAX_NAME_LENGTH) {
    throw new InvalidNameError(kind, value.slice(0, 40) + "…", `longer than ${MAX_NAME_LENGTH}`);
  }
  if (value === "." || value === "..") throw new InvalidNameError(kind, value, "not a name");
  if (!SAFE_NAME.test(value)) {
    throw new InvalidNameError(kind, value, "only letters, digits, '.', '_' and '-' are allowed");
  }
  return value;
}

/** {@linkcode validateName} for a command-line argument: a bad name is a usage error. */
export function nameArgument(kind: NameKind, value: unknown): string {
  try {
    return validateName(kind, value);
  } catch (error) {
    if (error instanceof InvalidNameError) throw new UsageError(error.message);
    throw error;
  }
}

/** Project-level state under a root. */
export function projectPaths(root: string) {
  const sessions = joinPath(root, "sessions");
  const claims = joinPath(root, ".claims");
  const workingState = joinPath(root, ".working-state");
  const logs = joinPath(root, "logs");
  const harness = joinPath(root, ".EnjoyHarness");
  const trace = joinPath(root, ".trace");
  return {
    root,
    sessions,
    claims,
    workingState,
    currentPlan: joinPath(workingState, "current-plan.md"),
    fallbackTools: joinPath(workingState, "fallback-tools.md"),
    logs,
    recoveryLog: joinPath(logs, "error-recovery.log"),
    harness,
    trace,
    /** lifeline's own per-project directory: config and private state. */
    lifeline: joinPath(root, ".lifeline"),
    config: joinPath(root, ".lifeline", "config.json"),
    /** Which finished plan `hook crash` has already called finished (it says so once). */
    finishedPlan: joinPath(root, ".lifeline", "finished-plan.json"),
    /** What `hook crash` found in each session, kept for the next start (see `survey.ts`). */
    surveyCache: joinPath(root, ".lifeline", "survey.json"),
  };
}

/** One session's state directory; validates the id first. */
export function sessionPaths(root: string, sessionId: string) {
  const dir = joinPath(root, "sessions", validateName("session id", sessionId));
  const handoffs = joinPath(dir, "handoffs");
  return {
    dir,
    ralph: joinPath(dir, "ralph.json"),
    heartbeat: joinPath(dir, "heartbeat"),
    session: joinPath(dir, "session.json"),
    status: joinPath(dir, "status"),
    outbox: joinPath(dir, "outbox.jsonl"),
    /** Turn events (StopFailure) waiting to be folded into the failure tracker. */
    events: joinPath(dir, "events.jsonl"),
    /** The last StopFailure (an API error ended a turn), for the watcher. */
    stopFailure: joinPath(dir, "stop-failure.json"),
    failureTracker: joinPath(dir, "failure-tracker.json"),
    handoffs,
    scavenged: joinPath(handoffs, "scavenged.md"),
    /** lifeline's mark that the session is finished (ended, or its handoff delivered). */
    finished: joinPath(dir, "finished"),
    /** Why and when the session ended (its SessionEnd), kept apart from the registry's lock. */
    end: joinPath(dir, "end.json"),
    /** `daemon stale --revive` resumed the session once: it is never revived again. */
    revived: joinPath(dir, "revived.json"),
    mcpRetry: (tool: string) => joinPath(dir, `mcp-retry-${validateName("tool name", tool)}.json`),
    failCount: (tool: string) => joinPath(dir, `fail-count-${validateName("tool name", tool)}.txt`),
  };
}

/** The loop harness of spec/handle-failure.md: `.EnjoyHarness/` and `.trace/`. */
export function harnessPaths(root: string) {
  const dir = joinPath(root, ".EnjoyHarness");
  const trace = joinPath(root, ".trace");
  return {
    dir,
    trace,
    globalState: joinPath(dir, "GLOBAL_STATE.md"),
    eventLog: joinPath(dir, "EVENT_LOG.md"),
    iterationCounter: joinPath(dir, "ITERATION_COUNTER.md"),
    skillRegistry: joinPath(dir, "SKILL_REGISTRY.md"),
    contract: joinPath(dir, "EXECUTION_CONTRACT.md"),
    /** The JSON source of truth for the numbers the markdown files show. */
    state: joinPath(dir, "handle-failure.json"),
    errorTrace: joinPath(trace, "ERROR_TRACE.md"),
    breaker: (task: string) =>
      joinPath(dir, `.circuit-breaker-task-${validateName("task id", task)}`),
    report: (task: string) => joinPath(trace, `FAILURE_REPORT_${validateName("task id", task)}.md`),
  };
}

type Env = Readonly<Record<string, string>>;

/** The user's home directory, from `HOME` (or `USERPROFILE` on Windows). */
export function homeDir(env: Env): string {
  const home = env.HOME || env.USERPROFILE;
  if (!home) throw new Error("Cannot find the home directory: HOME is not set");
  return home;
}

/** Claude Code's configuration directory: `$CLAUDE_CONFIG_DIR`, or `~/.claude`. */
export function claudeConfigDir(env: Env): string {
  return env.CLAUDE_CONFIG_DIR || joinPath(homeDir(env), ".claude");
}

/** The self-heal kill switch: the file exists means self-heal is off. */
export function killSwitchPath(env: Env): string {
  return joinPath(claudeConfigDir(env), "self-heal.off");
}

/** The user's config file: `$XDG_CONFIG_HOME/lifeline/config.json` or `~/.config/lifeline/…`. */
export function userConfigPath(env: Env): string {
  const base = env.XDG_CONFIG_HOME || joinPath(homeDir(env), ".config");
  return joinPath(base, "lifeline", "config.json");
}

/**
 * lifeline's per-user state: `$LIFELINE_STATE_DIR`, else `$XDG_STATE_HOME/lifeline`, else
 * `~/.local/state/lifeline`. Holds its own log and the watcher and daemon locks.
 */
export function stateDir(env: Env): string {
  if (env.LIFELINE_STATE_DIR) return env.LIFELINE_STATE_DIR;
  const base = env.XDG_STATE_HOME || joinPath(homeDir(env), ".local", "state");
  return joinPath(base, "lifeline");
}

/** lifeline's own log: one JSON line per internal failure (hooks log here and stay silent). */
export function ownLogPath(env: Env): string {
  return joinPath(stateDir(env), "lifeline.log");
}

/**
 * The project root a hook works on: `--root`, else `LIFELINE_ROOT`, else `CLAUDE_PROJECT_DIR`,
 * else the `cwd` of the hook input. Relative values are taken from the working directory.
 */
export function resolveHookRoot(
  { flag, env, inputCwd, cwd }: {
    flag?: string | undefined;
    env: Env;
    inputCwd?: string | undefined;
    cwd: string;
  },
): string {
  const chosen = flag || env.LIFELINE_ROOT || env.CLAUDE_PROJECT_DIR;
  if (chosen) return absolutePath(chosen, cwd);
  if (!inputCwd) throw new Error("Cannot tell the project root: no --root, LIFELINE_ROOT, or cwd");
  // The client always sends an absolute cwd; anything else is bad input, and state written
  // relative to wherever the hook happens to run would land somewhere nobody looks.
  if (!isAbsolutePath(inputCwd)) throw new Error(`the input's cwd is not absolute: ${inputCwd}`);
  return inputCwd;
}
