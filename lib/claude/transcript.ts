/**
 * Reading Claude Code transcripts (`transcript_path`, JSON lines; reference §5). Rows of unknown
 * type are ignored, and a torn last line is skipped.
 *
 * @module
 */

import { dirName } from "../core/path.ts";
import { openStateFile, readFileTail } from "../state/store.ts";

/**
 * Opens a transcript for reading: a regular file, never a FIFO or a device (reading one would
 * block or never end). Its directory may be reached through links; the file itself may not be one.
 */
export function openTranscript(path: string): Promise<Deno.FsFile> {
  return openStateFile(path, { root: dirName(path) });
}

/** Something that happened to a turn: an API error (keyed by the prompt it answered), or a reply. */
export type TurnOutcome =
  | { kind: "api_error"; key: string; at: number; error: string; message?: string | undefined }
  | { kind: "success"; at: number };

/** The last `maxBytes` of a transcript as complete lines (the first, partial line is dropped). */
export async function readTailLines(path: string, maxBytes: number): Promise<string[]> {
  return (await readFileTail(path, { root: dirName(path), maxBytes })).lines;
}

const MESSAGE_ROW = /"type"\s*:\s*"(?:user|assistant)"/;

interface MessageRow {
  type?: unknown;
  promptId?: unknown;
  uuid?: unknown;
  timestamp?: unknown;
  isApiErrorMessage?: unknown;
  error?: unknown;
  message?: { model?: unknown; content?: unknown };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => (block && typeof block === "object" && "text" in block ? block.text : ""))
    .filter((text): text is string => typeof text === "string")
    .join("\n");
}

/**
 * Turn outcomes found in transcript rows: each synthetic API-error row (`isApiErrorMessage`) is
 * a failure keyed by the prompt it answered (the same key a StopFailure hook records), and each
 * real assistant row is a success at its time. Also returns the last real model seen.
 */
export function outcomesFromRows(lines: readonly string[]): {
  outcomes: TurnOutcome[];
  model: string | null;
} {
  const outcomes: TurnOutcome[] = [];
  let promptId: string | null = null;
  let model: string | null = null;
  for (const line of lines) {
    // Most rows are other types (attachments, request blobs); skip them before parsing.
    if (!MESSAGE_ROW.test(line)) continue;
    let row: MessageRow;
    try {
      row = JSON.parse(line);
    } catch {
      continue;
    }
    if (row.type === "user" && typeof row.promptId === "string") promptId = row.promptId;
    if (row.type !== "assistant") continue;
    const at = typeof row.timestamp === "string" ? Date.parse(row.timestamp) : NaN;
    if (Number.isNaN(at)) continue;
    if (row.isApiErrorMessage === true) {
      const key = promptId ?? (typeof row.uuid === "string" ? row.uuid : `transcript:${at}`);
      outcomes.push({
        kind: "api_error",
        key,
        at,
        error: typeof row.error === "string" ? row.error : "unknown",
        message: textOf(row.message?.content),
      });
    } else {
      outcomes.push({ kind: "success", at });
      const m = row.message?.model;
      if (typeof m === "string" && m !== "<synthetic>") model = m;
    }
  }
  return { outcomes, model };
}
