/**
 * The hook contract with Claude Code (DESIGN §5, reference §1–2, §9): input shapes, output
 * builders, and {@linkcode runHook}, the fail-open wrapper every hook runs inside.
 *
 * A hook prints exactly one JSON object whose `hookSpecificOutput.hookEventName` is the event that
 * fired, or nothing: the client injects any other stdout into the model's context. On any failure
 * it exits 0, prints nothing and logs one line to lifeline's own log.
 *
 * @module
 */

import type { Context, StdinReader } from "../core/cli.ts";
import type { Config } from "../state/config.ts";
import { importLater, lazy } from "../core/lazy.ts";
import {
  array,
  boolean,
  type Infer,
  literal,
  looseObject,
  number,
  optional,
  safeParseShape,
  string,
  unknown,
} from "../core/shape.ts";
import type * as OwnLog from "../state/own_log.ts";
import { resolveHookRoot, validateName } from "../state/layout.ts";
import type * as JsonText from "../core/json_text.ts";
import type * as Flags from "../core/flags.ts";
import type * as ConfigModule from "../state/config.ts";

// ---------------------------------------------------------------------------------------------
// Input

/** Fields every event carries (`BaseHookInput`). Unknown fields are kept. */
const baseFields = {
  session_id: string(),
  transcript_path: optional(string()),
  cwd: string(),
  prompt_id: optional(string()),
  permission_mode: optional(string()),
  agent_id: optional(string()),
  agent_type: optional(string()),
  effort: optional(looseObject({ level: optional(string()) })),
};

/** Fields of the tool events. */
const toolFields = {
  tool_name: string(),
  tool_input: optional(unknown()),
  tool_use_id: optional(string()),
  mcp_server: optional(looseObject({ name: string(), source: optional(string()) })),
};

/**
 * Input shapes by event name (reference §1); see `shape.ts`. Events not listed here are read with
 * {@linkcode OTHER_INPUT_SHAPE}.
 */
export const HOOK_INPUT_SHAPES = {
  PostToolUse: looseObject({
    ...baseFields,
    ...toolFields,
    hook_event_name: literal("PostToolUse"),
    tool_response: optional(unknown()),
    duration_ms: optional(number()),
  }),
  PostToolUseFailure: looseObject({
    ...baseFields,
    ...toolFields,
    hook_event_name: literal("PostToolUseFailure"),
    error: string(),
    is_interrupt: optional(boolean()),
    duration_ms: optional(number()),
  }),
  UserPromptSubmit: looseObject({
    ...baseFields,
    hook_event_name: literal("UserPromptSubmit"),
    prompt: string(),
    source: optional(string()),
    session_title: optional(string()),
  }),
  SessionStart: looseObject({
    ...baseFields,
    hook_event_name: literal("SessionStart"),
    /** startup, resume, clear, compact or fork. */
    source: string(),
    /** Present in interactive sessions only (reference §9). */
    model: optional(string()),
    session_title: optional(string()),
  }),
  SessionEnd: looseObject({
    ...baseFields,
    hook_event_name: literal("SessionEnd"),
    reason: string(),
  }),
  Stop: looseObject({
    ...baseFields,
    hook_event_name: literal("Stop"),
    stop_hook_active: boolean(),
    last_assistant_message: optional(string()),
    background_tasks: optional(array(unknown())),
    session_crons: optional(array(unknown())),
  }),
  StopFailure: looseObject({
    ...baseFields,
    hook_event_name: literal("StopFailure"),
    /** `SDKAssistantMessageError`: rate_limit, server_error, overloaded, … (reference §1). */
    error: string(),
    error_details: optional(string()),
    last_assistant_message: optional(string()),
  }),
};

/** Any other event: the base fields plus its name. */
export const OTHER_INPUT_SHAPE = looseObject({ ...baseFields, hook_event_name: string() });

/** An event lifeline knows the fields of. */
export type KnownEvent = keyof typeof HOOK_INPUT_SHAPES;

/** A named event's input. */
export type InputOf<E extends KnownEvent> = Infer<(typeof HOOK_INPUT_SHAPES)[E]>;

/** A validated hook input. */
export type HookInput =
  | { [E in KnownEvent]: InputOf<E> }[KnownEvent]
  | Infer<typeof OTHER_INPUT_SHAPE>;

/** The input was not a hook payload lifeline can use. */
export class HookInputError extends Error {
  override name = "HookInputError";
}

/**
 * Parses stdin text into a validated {@linkcode HookInput}. Rejects with {@linkcode HookInputError}
 * (zod's first issue says which field and why).
 */
export async function parseHookInput(text: string): Promise<HookInput> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new HookInputError(`stdin is not JSON (${(error as Error).message})`);
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new HookInputError("stdin is not a JSON object");
  }
  const event = (json as { hook_event_name?: unknown }).hook_event_name;
  const shape = typeof event === "string" && Object.hasOwn(HOOK_INPUT_SHAPES, event)
    ? HOOK_INPUT_SHAPES[event as KnownEvent]
    : OTHER_INPUT_SHAPE;
  const result = await safeParseShape<HookInput>(shape, json);
  if (!result.success) {
    const { describeIssue, issuePath } = await importLater<typeof JsonText>(
      "../core/json_text.ts",
      import.meta.url,
    ); // rejections only
    const issue = result.error.issues[0]!;
    throw new HookInputError(`${issuePath(issue.path)}: ${describeIssue(issue, json)}`);
  }
  return result.data;
}

/** True when `input` is the named event's input. */
export function isEvent<E extends KnownEvent>(
  input: HookInput,
  event: E,
): input is InputOf<E> {
  return input.hook_event_name === event;
}

/** Largest stdin a hook reads. Real payloads carry tool inputs and outputs (a Write of a big file). */
export const MAX_STDIN_BYTES = 32 << 20;

/** How long a hook waits for its stdin to close before giving up. */
export const STDIN_TIMEOUT_MS = 10_000;

/**
 * Reads all of stdin as text, failing past `maxBytes` or `timeoutMs`, or at once when stdin is a
 * terminal (a hook run by hand without input would otherwise wait for ever).
 *
 * Plain reads and `AbortSignal.timeout`, not web streams and `setTimeout`: the first use of each of
 * those costs ~5 ms of start-up, which a hook pays on every tool call.
 */
export async function readStdinText(
  stdin: StdinReader,
  { maxBytes = MAX_STDIN_BYTES, timeoutMs = STDIN_TIMEOUT_MS } = {},
): Promise<string> {
  if (stdin.isTerminal()) throw new HookInputError("stdin is a terminal, not a hook input");
  const deadline = AbortSignal.timeout(timeoutMs);
  const timedOut = new Promise<never>((_, reject) => {
    deadline.addEventListener("abort", () => {
      reject(new HookInputError(`stdin did not close within ${timeoutMs} ms`));
    });
  });
  const chunks: Uint8Array[] = [];
  const buffer = new Uint8Array(1 << 16);
  let total = 0;
  for (;;) {
    const n = await Promise.race([stdin.read(buffer), timedOut]);
    if (n === null) break;
    total += n;
    if (total > maxBytes) throw new HookInputError(`stdin is larger than ${maxBytes} bytes`);
    chunks.push(buffer.slice(0, n));
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new TextDecoder().decode(bytes);
}

// ---------------------------------------------------------------------------------------------
// Output

/** Events whose `hookSpecificOutput` may carry `additionalContext` (reference §2). */
export const CONTEXT_EVENTS = [
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
  "PostToolBatch",
  "Notification",
  "UserPromptSubmit",
  "UserPromptExpansion",
  "SessionStart",
  "Setup",
  "SubagentStart",
  "PostModelSwitch",
  "Stop",
  "SubagentStop",
] as const;

/** An event that can carry context to the model. */
export type ContextEvent = (typeof CONTEXT_EVENTS)[number];

/** The only thing a lifeline hook prints: context for the model, tagged with the event. */
export type HookOutput = {
  [E in ContextEvent]: { hookSpecificOutput: { hookEventName: E; additionalContext: string } };
}[ContextEvent];

/** The client's cap on context injected by a hook. */
export const MAX_CONTEXT_CHARS = 10_000;

const TRUNCATED = "\n… [lifeline: truncated to fit the 10,000-character hook limit]";

/** `text` shortened to fit {@linkcode MAX_CONTEXT_CHARS}, saying so when it was cut. */
export function capContext(text: string): string {
  if (text.length <= MAX_CONTEXT_CHARS) return text;
  return text.slice(0, MAX_CONTEXT_CHARS - TRUNCATED.length) + TRUNCATED;
}

/** True when `event` can carry `additionalContext`. */
export function isContextEvent(event: string): event is ContextEvent {
  return (CONTEXT_EVENTS as readonly string[]).includes(event);
}

/**
 * Builds the output that gives `text` to the model under `event`, or null when the event cannot
 * carry context or there is nothing to say.
 */
export function contextOutput(event: string, text: string): HookOutput | null {
  if (text.trim() === "" || !isContextEvent(event)) return null;
  return {
    hookSpecificOutput: { hookEventName: event, additionalContext: capContext(text) },
  } as HookOutput;
}

// ---------------------------------------------------------------------------------------------
// The fail-open wrapper

/** Flags every hook accepts. */
export interface HookFlags {
  root?: string;
  /** Running detached or as an async hook: never wait for a lock, never retry. */
  background: boolean;
}

/** What a hook handler gets. */
export interface HookRequest {
  input: HookInput;
  /** The project root (see `resolveHookRoot`). */
  root: string;
  flags: HookFlags;
  ctx: Context;
  /**
   * The configuration, read on first call. Files that do not load are logged and replaced by the
   * defaults (hooks fail open). Hooks that need no setting never read the files.
   */
  config(): Promise<Config>;
  /** How long to wait for a state lock: 0 in the background, the configured wait otherwise. */
  lockWaitMs(): Promise<number>;
}

/** A hook's logic: returns what to tell the model, or null. May throw; the wrapper fails open. */
export type HookHandler = (request: HookRequest) => Promise<HookOutput | null>;

/** Help text shared by the hooks' `--help`. */
export const HOOK_FLAGS_HELP = `Options:
  --root DIR      project root (default: $LIFELINE_ROOT, $CLAUDE_PROJECT_DIR, then the input's cwd)
  --background    never wait for a lock or retry (for detached and async use)
  -h, --help      show this help

Reads one hook input (JSON) on stdin. Prints one JSON object for Claude Code, or nothing.
Always exits 0 on bad input or internal failure, and logs one line to lifeline's own log.`;

/**
 * `logToOwnLog`, with its module loaded on first use: a hook that goes well logs nothing. Never
 * throws, as `logToOwnLog` does not.
 */
export async function logHookProblem(
  ...args: Parameters<typeof OwnLog.logToOwnLog>
): Promise<void> {
  try {
    const { logToOwnLog } = await importLater<typeof OwnLog>(
      "../state/own_log.ts",
      import.meta.url,
    );
    await logToOwnLog(...args);
  } catch {
    // Nowhere left to report to; the hook still exits quietly.
  }
}

async function parseHookFlags(args: readonly string[]): Promise<HookFlags> {
  if (args.length === 0) return { background: false }; // the usual case: skip loading node:util
  const { parseFlags } = await importLater<typeof Flags>("../core/flags.ts", import.meta.url);
  const { values } = parseFlags(args, {
    root: { type: "string" },
    background: { type: "boolean" },
  });
  return values.root === undefined
    ? { background: values.background === true }
    : { root: values.root, background: values.background === true };
}

/** How a hook runs. */
export interface HookOptions {
  /**
   * Background hooks (heartbeat: meant for `"async": true`) always behave as with
   * `--background`: they never wait for a lock or retry (DESIGN §5, anti-stampede).
   */
  background?: boolean;
}

/**
 * Runs a hook fail-open: reads and validates stdin, resolves the root, calls `handle`, prints its
 * output. Bad flags are a usage error (exit 64, the client shows it and goes on); everything else
 * that goes wrong exits 0 with nothing on stdout and one line in the own log.
 */
export async function runHook(
  ctx: Context,
  name: string,
  handle: HookHandler,
  { background = false }: HookOptions = {},
): Promise<number> {
  const flags = await parseHookFlags(ctx.args);
  if (background) flags.background = true;
  let session: string | undefined;
  let root: string | undefined;
  try {
    const input = await parseHookInput(await readStdinText(ctx.stdin));
    session = validateName("session id", input.session_id);
    root = resolveHookRoot({ flag: flags.root, env: ctx.env, inputCwd: input.cwd, cwd: ctx.cwd });
    const where = { session, root };
    // Loaded on first use: the heartbeat never needs it, and most calls of the others neither.
    const config = lazy(async () => {
      const { DEFAULT_CONFIG, loadConfig } = await importLater<typeof ConfigModule>(
        "../state/config.ts",
        import.meta.url,
      );
      return await loadConfig(ctx.env, where.root).catch(async (error) => {
        await logHookProblem(ctx.env, {
          command: `hook ${name}`,
          message: "invalid config, using defaults",
          error,
          ...where,
        });
        return DEFAULT_CONFIG;
      });
    });
    const lockWaitMs = async () => flags.background ? 0 : (await config()).hooks.lockWaitMs;
    const output = await handle({ input, root, flags, ctx, config, lockWaitMs });
    if (output) ctx.out.json(output);
  } catch (error) {
    await logHookProblem(ctx.env, {
      command: `hook ${name}`,
      message: "failed open",
      error,
      ...(session === undefined ? {} : { session }),
      ...(root === undefined ? {} : { root }),
    });
  }
  return 0;
}
