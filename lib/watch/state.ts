/**
 * The watcher's own files, keyed by the tmux server they belong to: one lock (one watcher per
 * server, however the server was named), and one state file holding a record per pane, for one
 * server process (a recreated server starts afresh).
 *
 * @module
 */

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

/** Codec for the state file; a file of another shape does not parse (and is moved aside). */
export const watchStateCodec = jsonCodec<WatchState>((value) => {
  const v = value as Partial<WatchState> | null;
  if (v?.version !== 2 || !v.server || typeof v.server.socket !== "string") {
    throw new Error("not a lifeline watcher state (version 2)");
  }
  if (!v.panes || typeof v.panes !== "object" || Array.isArray(v.panes)) {
    throw new Error("no panes");
  }
  return v as WatchState;
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
