/**
 * The watcher's own files, keyed by the tmux server they belong to: one lock (one watcher per
 * server, however the server was named), and one state file holding a record per pane, for one
 * server process (a recreated server starts afresh).
 *
 * @module
 */

import * as z from "zod";
import { lazy } from "../core/lazy.ts";
import { baseName, joinPath } from "../core/path.ts";
import { shortHash } from "../core/text.ts";
import { stateDir } from "../state/layout.ts";
import { jsonCodec } from "../state/store.ts";
import type { PaneRecord } from "./watch_policy.ts";

/** `watch/<server>.json`. */
export interface WatchState {
  version: 2;
  server: { socket: string; pid: number | null };
  panes: Record<string, PaneRecord>;
}

const paneRecordSchema = lazy(() => {
  const time = () => z.nullable(z.number().check(z.minimum(0)));
  const text = () => z.nullable(z.string());
  const count = () => z.int().check(z.minimum(0), z.maximum(1_000_000));
  return z.object({
    pane: z.string().check(z.regex(/^%\d{1,9}$/)),
    identity: z.string(),
    session: z.string(),
    state: z.enum([
      "usage_limit",
      "native_autocontinue",
      "transient_api_error",
      "busy",
      "permanent",
      "dangerous_prompt",
      "limit_menu",
      "normal",
    ]),
    signal: z.nullable(z.enum(["records", "screen", "both"])),
    reason: z.string(),
    episode: text(),
    first_seen_at: time(),
    reset_at: time(),
    resume_at: time(),
    next_look_at: time(),
    attempts: count(),
    resumed: z.boolean(),
    gave_up: z.boolean(),
    unparsed: count(),
    quiet_on: text(),
    refusal: text(),
    tried: z.array(z.string()).check(z.maxLength(100)),
    api_retries: count(),
    paused: z.optional(z.boolean()),
    notified: z.optional(text()),
    left_text: z.optional(text()),
  });
});

/**
 * Codec for the state file; a file of another shape does not parse (and is moved aside). A pane
 * record that does not validate is dropped, alone: that pane starts afresh (nothing it says can
 * make the watcher type sooner, or stop it watching the pane).
 */
export const watchStateCodec = jsonCodec<WatchState>((value) => {
  const v = value as Partial<WatchState> | null;
  if (v?.version !== 2 || !v.server || typeof v.server.socket !== "string") {
    throw new Error("not a lifeline watcher state (version 2)");
  }
  if (!v.panes || typeof v.panes !== "object" || Array.isArray(v.panes)) {
    throw new Error("no panes");
  }
  const pid = typeof v.server.pid === "number" ? v.server.pid : null;
  const panes: Record<string, PaneRecord> = {};
  for (const [id, record] of Object.entries(v.panes)) {
    const checked = z.safeParse(paneRecordSchema(), record);
    if (checked.success && checked.data.pane === id) panes[id] = checked.data as PaneRecord;
  }
  return { version: 2, server: { socket: v.server.socket, pid }, panes };
});

/**
 * Where a server's watcher keeps its lock and state: named after the socket's real path, so
 * `--socket NAME`, `--socket-path PATH`, no flag and `$TMUX` agree on one server, and sockets
 * whose names differ only in punctuation (`a b`, `a_b`) do not collide.
 */
export async function watchFiles(
  env: Readonly<Record<string, string>>,
  socketPath: string,
): Promise<{ base: string; lock: string; state: string }> {
  const real = await Deno.realPath(socketPath).catch(() => socketPath);
  const slug = baseName(real).replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 60) || "socket";
  const base = joinPath(stateDir(env), "watch", `${slug}-${shortHash(real)}`);
  return { base, lock: `${base}.lock`, state: `${base}.json` };
}
