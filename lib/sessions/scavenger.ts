/**
 * Rescuing a dead session's unsaved findings from its transcript (spec/error-recovery.md §5.3,
 * reference §5) into a handoff the next session reads. The transcript is streamed row by row
 * into a {@linkcode Scavenger}, which keeps only bounded summaries, so memory stays flat whatever
 * the file's size. Unknown row types are ignored; secrets never reach the handoff.
 *
 * @module
 */

import { openTranscript } from "../claude/transcript.ts";
import { shortHash } from "../core/text.ts";
import { JsonRowSplitter } from "../claude/json_rows.ts";
import { redact } from "./secrets.ts";

export { redact };

const KEEP_PROMPTS = 5;
const KEEP_REPLIES = 5;
const KEEP_ERRORS = 20;
const KEEP_FILES = 100;
const KEEP_COMPACTIONS = 20;
const MAX_TEXT = 1500;
/** Tool calls remembered while waiting for their results (a bound on memory). */
const MAX_PENDING_CALLS = 5000;
/** Open tasks (TaskCreate) kept, the newest; the handoff says how many older ones it leaves out. */
const KEEP_TASKS = 100;
/** TaskCreate calls remembered while waiting for the result that gives their task's id. */
const MAX_TASK_CALLS = 1000;
/** Open todos of the last TodoWrite kept, in its order; the rest are counted. */
const KEEP_TODOS = 100;
/** Inputs longer than this are told apart by their length, head and tail, not kept whole. */
const MAX_CALL_KEY = 1024;

/** A row the scavenger reads: user, assistant or system. */
const MESSAGE_ROW = /"type"\s*:\s*"(?:user|assistant|system)"/;

/** How far past the clip length redaction looks, so a secret that starts before the cut is seen whole. */
const REDACT_MARGIN = 4096;

/**
 * `text` redacted, then shortened to `max` characters. Redaction comes first and sees a bounded
 * window: a private key longer than `max` is caught by its BEGIN line, not cut before its END and
 * written out.
 */
function clip(text: string, max = MAX_TEXT): string {
  const flat = redact(text.slice(0, max + REDACT_MARGIN)).trim();
  return flat.length > max || text.length > max + REDACT_MARGIN ? flat.slice(0, max) + "…" : flat;
}

/** A todo still open when the session died. */
export interface OpenTodo {
  text: string;
  status: string;
}

/** What a transcript says about its session, in bounded summaries. */
export interface TranscriptSummary {
  sessionId: string | null;
  cwd: string | null;
  gitBranch: string | null;
  model: string | null;
  firstAt: string | null;
  lastAt: string | null;
  prompts: string[];
  replies: string[];
  todos: OpenTodo[];
  files: string[];
  errors: string[];
  apiError: string | null;
  compactions: string[];
  /** Open todos and tasks not in `todos` (beyond what is kept). */
  todosLeftOut: number;
  /** Lines that were not JSON (a torn last line, say) or too long to read. */
  skipped: number;
  /** Bytes of the transcript read. */
  read?: number;
  /** Bytes at the start of the transcript that were not read (it is larger than a read takes). */
  unread?: number;
}

// deno-lint-ignore no-explicit-any
type Row = any;

function textBlocks(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b) => b && typeof b === "object" && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("\n");
}

function resultText(content: unknown): string {
  const text = typeof content === "string" ? content : textBlocks(content);
  return text.replace(/<\/?tool_use_error>/g, "");
}

function describeCall(name: string, input: Row): string {
  const detail = input?.command ?? input?.file_path ?? input?.notebook_path ?? input?.url ??
    input?.pattern ?? input?.description;
  return typeof detail === "string" ? `${name} \`${clip(detail, 200)}\`` : name;
}

/**
 * What tells one call from another: its name and input, or, for a long input (a Write of a big
 * file), its length and a hash of both ends. A pending call never holds its input: a slice of a
 * long string would keep the whole string alive.
 */
function callKey(name: string, input: Row): string {
  const json = JSON.stringify(input) ?? "";
  if (json.length <= MAX_CALL_KEY) return `${name}\u0000${json}`;
  const ends = json.slice(0, MAX_CALL_KEY / 2) + json.slice(-MAX_CALL_KEY / 2);
  return `${name}\u0000${json.length}\u0000${shortHash(ends)}`;
}

/** Collects a transcript's summary one row at a time. */
export class Scavenger {
  #s: TranscriptSummary = {
    sessionId: null,
    cwd: null,
    gitBranch: null,
    model: null,
    firstAt: null,
    lastAt: null,
    prompts: [],
    replies: [],
    todos: [],
    files: [],
    errors: [],
    apiError: null,
    compactions: [],
    todosLeftOut: 0,
    skipped: 0,
  };
  /** The last assistant message's id and text, merged across its streamed rows. */
  #reply: { id: string; text: string } | null = null;
  /**
   * Pending tool calls, by id: what tells them apart, and how the handoff names them; a few
   * hundred bytes each, whatever the size of their input. Two maps of strings, not one of
   * objects: a container that outlives a young-generation collection keeps its strings alive with
   * it, and the heap then grows with the length of the transcript.
   */
  #callKeys = new Map<string, string>();
  #callLabels = new Map<string, string>();
  #failed = new Map<string, string>();
  #todoWrite: OpenTodo[] = [];
  #todoWriteLeftOut = 0;
  #tasks = new Map<string, OpenTodo>();
  /** Open tasks created but dropped from `#tasks` to keep it small (some may be done since). */
  #tasksLeftOut = 0;
  #taskCalls = new Map<string, string>();

  /** Adds one transcript line (unparseable lines are counted and skipped). */
  addLine(line: string): void {
    if (line.trim() === "") return;
    // Most bytes are in rows nobody here reads (request blobs, attachments, snapshots): skip
    // them before parsing, which also keeps the garbage, and so the memory, down.
    if (!MESSAGE_ROW.test(line)) {
      if (!line.trimEnd().endsWith("}")) this.#s.skipped++; // a torn line
      return;
    }
    let row: Row;
    try {
      row = JSON.parse(line);
    } catch {
      this.#s.skipped++;
      return;
    }
    if (row && typeof row === "object") this.addRow(row);
  }

  /** Adds one parsed row. */
  addRow(row: Row): void {
    const s = this.#s;
    if (
      typeof row.timestamp === "string" &&
      (row.type === "user" || row.type === "assistant" || row.type === "system")
    ) {
      s.firstAt ??= row.timestamp;
      s.lastAt = row.timestamp;
    }
    // Replaced only when they change: the strings kept stay the old ones, so little that is young
    // survives a collection (see #callKeys).
    if (typeof row.cwd === "string" && row.cwd !== s.cwd) s.cwd = row.cwd;
    if (typeof row.gitBranch === "string" && row.gitBranch !== s.gitBranch) {
      s.gitBranch = row.gitBranch;
    }
    if (typeof row.sessionId === "string" && row.sessionId !== s.sessionId) {
      s.sessionId = row.sessionId;
    }
    switch (row.type) {
      case "user":
        return this.#user(row);
      case "assistant":
        return this.#assistant(row);
      case "system":
        if (row.subtype === "compact_boundary") {
          const meta = row.compactMetadata ?? {};
          const tokens = typeof meta.preTokens === "number"
            ? `, ${meta.preTokens} tokens before`
            : "";
          s.compactions.push(`${row.timestamp ?? "?"} (${meta.trigger ?? "compaction"}${tokens})`);
          if (s.compactions.length > KEEP_COMPACTIONS) s.compactions.shift();
        }
        return;
      default:
        return; // metadata rows and types this version does not know
    }
  }

  #user(row: Row): void {
    const content = row.message?.content;
    if (Array.isArray(content)) {
      for (const block of content) {
        if (block?.type === "tool_result") this.#toolResult(block, row.toolUseResult);
      }
    }
    if (row.isMeta || row.isCompactSummary) return;
    const text = typeof content === "string"
      ? content
      : Array.isArray(content) && !content.some((b) => b?.type === "tool_result")
      ? textBlocks(content)
      : "";
    if (text.trim() === "" || /^\[Request interrupted by user/.test(text)) return;
    this.#s.prompts.push(clip(text));
    if (this.#s.prompts.length > KEEP_PROMPTS) this.#s.prompts.shift();
  }

  #assistant(row: Row): void {
    const message = row.message ?? {};
    if (row.isApiErrorMessage) {
      const info = row.apiErrorParams?.rate_limit_info ?? row.quotaLimits;
      const resets = typeof info?.resetsAt === "number"
        ? ` (resets ${new Date(info.resetsAt * 1000).toISOString()})`
        : "";
      this.#s.apiError = `${row.error ?? "unknown"} at ${row.timestamp ?? "?"}: ${
        JSON.stringify(clip(textBlocks(message.content), 300))
      }${resets}`;
      return;
    }
    if (typeof message.model === "string" && message.model !== "<synthetic>") {
      if (message.model !== this.#s.model) this.#s.model = message.model;
    }
    const text = textBlocks(message.content);
    if (text.trim() !== "") {
      const id = typeof message.id === "string" ? message.id : crypto.randomUUID();
      const reply = this.#reply;
      if (reply && reply.id === id) {
        // Streamed rows of one message: one reply.
        reply.text = clip(`${reply.text}\n${text}`);
        this.#s.replies[this.#s.replies.length - 1] = reply.text;
      } else {
        this.#reply = { id, text: clip(text) };
        this.#s.replies.push(this.#reply.text);
        if (this.#s.replies.length > KEEP_REPLIES) this.#s.replies.shift();
      }
    }
    if (!Array.isArray(message.content)) return;
    for (const block of message.content) {
      if (block?.type === "tool_use") this.#toolUse(block);
    }
  }

  #toolUse(block: Row): void {
    const name = String(block.name ?? "tool");
    const input = block.input ?? {};
    if (typeof block.id === "string") {
      if (this.#callKeys.size >= MAX_PENDING_CALLS) {
        const oldest = this.#callKeys.keys().next().value!;
        this.#callKeys.delete(oldest);
        this.#callLabels.delete(oldest);
      }
      this.#callKeys.set(block.id, callKey(name, input));
      this.#callLabels.set(block.id, describeCall(name, input));
    }
    if (["Edit", "Write", "MultiEdit", "NotebookEdit"].includes(name)) {
      const path = input.file_path ?? input.notebook_path;
      if (typeof path === "string") {
        const files = this.#s.files;
        if (files.at(-1) !== path) {
          // A path seen before moves to the end as the string already kept (see #callKeys).
          const seen = files.indexOf(path);
          files.push(seen >= 0 ? files.splice(seen, 1)[0]! : path);
          if (files.length > KEEP_FILES) files.shift();
        }
      }
    }
    if (name === "TodoWrite" && Array.isArray(input.todos)) {
      const open = (input.todos as Row[]).filter((t) => t && t.status !== "completed");
      this.#todoWrite = open.slice(0, KEEP_TODOS).map((t: Row) => ({
        text: clip(String(t.content ?? ""), 300),
        status: String(t.status ?? "pending"),
      }));
      this.#todoWriteLeftOut = open.length - this.#todoWrite.length;
    }
    if (name === "TaskCreate" && typeof block.id === "string") {
      keepNewest(this.#taskCalls, MAX_TASK_CALLS - 1);
      this.#taskCalls.set(
        block.id,
        clip(String(input.subject ?? input.description ?? "task"), 300),
      );
    }
    if (name === "TaskUpdate" && input.taskId !== undefined) {
      const id = String(input.taskId);
      const task = this.#tasks.get(id);
      if (task && typeof input.status === "string") {
        if (input.status === "completed" || input.status === "deleted") this.#tasks.delete(id);
        else task.status = input.status;
      }
    }
  }

  #toolResult(block: Row, toolUseResult: Row): void {
    const id = String(block.tool_use_id ?? "");
    const key = this.#callKeys.get(id);
    const label = this.#callLabels.get(id);
    this.#callKeys.delete(id);
    this.#callLabels.delete(id);
    const subject = this.#taskCalls.get(id);
    if (subject !== undefined) {
      this.#taskCalls.delete(id);
      const taskId = toolUseResult?.task?.id ?? toolUseResult?.taskId ?? toolUseResult?.id ??
        /#?(\d+)/.exec(resultText(block.content))?.[1];
      if (taskId !== undefined && !block.is_error) {
        this.#tasksLeftOut += keepNewest(this.#tasks, KEEP_TASKS - 1);
        this.#tasks.set(String(taskId), { text: `#${taskId} ${subject}`, status: "pending" });
      }
    }
    if (key === undefined) return;
    if (block.is_error === true) {
      this.#failed.delete(key); // keep the newest failure last
      this.#failed.set(key, `${label}: ${clip(resultText(block.content), 300)}`);
      if (this.#failed.size > KEEP_ERRORS) this.#failed.delete(this.#failed.keys().next().value!);
    } else {
      // The same call succeeding later resolves the error.
      this.#failed.delete(key);
    }
  }

  /** The summary so far. */
  summary(): TranscriptSummary {
    return {
      ...this.#s,
      todos: [...this.#todoWrite, ...this.#tasks.values()],
      todosLeftOut: this.#todoWriteLeftOut + this.#tasksLeftOut,
      errors: [...this.#failed.values()],
    };
  }
}

/** Drops the oldest entries of `map` until it holds at most `size`; returns how many it dropped. */
function keepNewest<K, V>(map: Map<K, V>, size: number): number {
  let dropped = 0;
  for (const key of map.keys()) {
    if (map.size <= size) break;
    map.delete(key);
    dropped++;
  }
  return dropped;
}

/** Longest row the scavenger reads, once its strings are cut; longer ones are skipped (and counted). */
const MAX_ROW_BYTES = 4 << 20;
/**
 * Bytes of each string value a row keeps: more than any text the handoff shows (clipped to
 * {@linkcode MAX_TEXT} after redacting a window of {@linkcode REDACT_MARGIN} more).
 */
const MAX_STRING_BYTES = 8192;
/** How much of a row's start is decoded to see its type. */
const HEAD_BYTES = 64;
/** Metadata rows start with their type; message rows start with `parentUuid`. */
const LEADING_TYPE = /^\s*\{\s*"type"\s*:\s*"([^"]*)"/;

/** Most of a transcript read for one handoff: its last 256 MiB (a real one is far smaller). */
export const MAX_TRANSCRIPT_BYTES = 256 << 20;

/** How a transcript is read (see {@linkcode scavengeFile}). */
export interface ScavengeOptions {
  /** Read at most its last this many bytes. */
  maxBytes?: number;
  /** Stops the read (it then throws the signal's reason). */
  signal?: AbortSignal | undefined;
}

/**
 * Streams a transcript file through a {@linkcode Scavenger} with bounded memory. Rows are split as
 * bytes with every string value cut to a few KiB before anything is decoded (`json_rows.ts`), and
 * a row whose leading type says nobody here reads it (request blobs, attachments, snapshots) is
 * skipped undecoded: memory stays flat whatever the file's size or the size of its rows.
 *
 * Time is bounded too: at most the file's size at the open is read (a file of `/proc` that says
 * it holds nothing is read as empty; `/proc/kmsg` would block a read for ever), and at most its
 * last `maxBytes` (a sparse file of terabytes is a regular file too), starting at a line. Throws
 * when the file cannot be read, and when `signal` aborts.
 */
export async function scavengeFile(
  path: string,
  { maxBytes = MAX_TRANSCRIPT_BYTES, signal }: ScavengeOptions = {},
): Promise<TranscriptSummary> {
  const scavenger = new Scavenger();
  const decoder = new TextDecoder();
  let skipped = 0;
  const splitter = new JsonRowSplitter({
    wanted(head) {
      const type = LEADING_TYPE.exec(decoder.decode(head.subarray(0, HEAD_BYTES)))?.[1];
      // A row that does not lead with its type is decoded and judged by the scavenger.
      return type === undefined || type === "user" || type === "assistant" || type === "system";
    },
    row: (bytes) => scavenger.addLine(decoder.decode(bytes)),
    skipped(reason) {
      if (reason !== "unwanted") skipped++;
    },
  }, { maxStringBytes: MAX_STRING_BYTES, maxRowBytes: MAX_ROW_BYTES, headBytes: HEAD_BYTES });
  const file = await openTranscript(path);
  let unread = 0;
  let read = 0;
  try {
    const size = (await file.stat()).size;
    unread = Math.max(0, size - maxBytes);
    if (unread > 0) await file.seek(unread, Deno.SeekMode.Start);
    // Started in the middle of the file: the first line is a part of one, and is dropped.
    let lineStarted = unread === 0;
    const buffer = new Uint8Array(1 << 18);
    for (let left = size - unread; left > 0;) {
      signal?.throwIfAborted();
      const n = await file.read(buffer.subarray(0, Math.min(buffer.length, left)));
      if (n === null) break;
      left -= n;
      read += n;
      let chunk = buffer.subarray(0, n);
      if (!lineStarted) {
        const newline = chunk.indexOf(0x0a);
        if (newline < 0) continue;
        chunk = chunk.subarray(newline + 1);
        lineStarted = true;
      }
      splitter.push(chunk);
    }
    splitter.end();
  } finally {
    file.close();
  }
  const summary = scavenger.summary();
  return {
    ...summary,
    skipped: summary.skipped + skipped,
    read,
    ...(unread > 0 ? { unread } : {}),
  };
}

/** What the daemon knows about the session apart from its transcript. */
export interface HandoffFacts {
  sessionId: string;
  cwd: string | null;
  transcriptPath: string | null;
  /** Why the session counts as dead, in a few words. */
  cause: string;
  rescuedAt: string;
  /** Why the transcript could not be read, when it could not. */
  transcriptProblem?: string;
}

function list(items: readonly string[], numbered = false): string {
  if (items.length === 0) return "- (none)";
  return items.map((item, i) => `${numbered ? `${i + 1}.` : "-"} ${item.replace(/\n/g, "\n   ")}`)
    .join("\n");
}

/** The handoff's markdown. Every text from the transcript passes through {@linkcode redact}. */
export function renderHandoff(facts: HandoffFacts, summary: TranscriptSummary | null): string {
  const s = summary;
  const fact = (label: string, value: string | null | undefined) =>
    `- ${label}: ${value ?? "unknown"}`;
  const sections = [
    `# Handoff from session ${facts.sessionId}`,
    "",
    `Rescued by \`lifeline daemon stale\` at ${facts.rescuedAt}: ${facts.cause}. This is what ` +
    "the session was doing, from its transcript. Check before you trust it: the work may be half done.",
    "",
    "## Facts",
    fact("Session", facts.sessionId),
    fact("Working directory", s?.cwd ?? facts.cwd),
    fact("Git branch", s?.gitBranch),
    fact("Model", s?.model),
    fact("First activity", s?.firstAt),
    fact("Last activity", s?.lastAt),
    fact("Transcript", facts.transcriptPath),
    "",
    "## Last user prompts",
    list(s?.prompts ?? [], true),
    "",
    "## Last assistant messages",
    list(s?.replies ?? [], true),
    "",
    "## Open todos",
    s && s.todos.length > 0
      ? s.todos.map((t) => `- [ ] ${t.text}${t.status === "pending" ? "" : ` (${t.status})`}`).join(
        "\n",
      ) + (s.todosLeftOut > 0 ? `\n- … and ${s.todosLeftOut} more, older, not listed` : "")
      : "- (none)",
    "",
    "## Files edited or written",
    list(s?.files ?? []),
    "",
    "## Unresolved tool errors",
    list(s?.errors ?? []),
    "",
    "## Last API error",
    s?.apiError ? `- ${s.apiError}` : "- (none)",
    "",
    "## Compactions",
    list(s?.compactions ?? []),
  ];
  const notes = [
    ...(facts.transcriptProblem
      ? [
        `The transcript could not be read (${facts.transcriptProblem}); only the facts above are known.`,
      ]
      : []),
    ...(s && s.skipped > 0
      ? [`${s.skipped} unreadable transcript line${s.skipped === 1 ? " was" : "s were"} skipped.`]
      : []),
    ...(s?.unread
      ? [
        `The transcript is larger than a handoff reads: its first ${s.unread} bytes were not ` +
        "read, only what came after.",
      ]
      : []),
  ];
  if (notes.length > 0) sections.push("", "## Notes", list(notes));
  return boundHandoff(redact(sections.join("\n"))) + "\n";
}

/** Largest handoff written: far more than its bounded sections add up to. */
export const MAX_HANDOFF_CHARS = 64 << 10;

/** A handoff cut to {@linkcode MAX_HANDOFF_CHARS} at a line, saying so. */
function boundHandoff(text: string): string {
  if (text.length <= MAX_HANDOFF_CHARS) return text;
  const cut = text.lastIndexOf("\n", MAX_HANDOFF_CHARS - 200);
  return `${text.slice(0, cut)}\n\n(lifeline cut this handoff to ${MAX_HANDOFF_CHARS} characters.)`;
}
