/**
 * A thin client over the real `tmux` program. Every call addresses one server (`-L name` or
 * `-S path`, or the default) and panes by their `%id` only: ids are unique for a server's
 * lifetime, where `session:window.pane` positions get reused.
 *
 * @module
 */

import { ProgramMissingError, runProgram } from "./process.ts";

/** Which tmux server to talk to. */
export type TmuxServer = { socketName: string } | { socketPath: string } | Record<never, never>;

/** A pane, as `list-panes` reports it. */
export interface PaneInfo {
  /** `%3` */
  id: string;
  session: string;
  /** `session:window.pane`, for people. */
  position: string;
  /** The foreground program's name (`pane_current_command`). */
  command: string;
  /** The pid of the process the pane was started with. */
  pid: number;
  dead: boolean;
  /** The window has `synchronize-panes` on: keys sent to it reach every pane of the window. */
  synchronized: boolean;
  /** The pane is in a mode (copy mode, a chooser): keys go to the mode, not the program. */
  inMode: boolean;
  /** Input to the pane is disabled (`select-pane -d`). */
  inputOff: boolean;
  width: number;
  /** The user option `@lifeline` is `off` for the pane (or its window or session): hands off. */
  optedOut: boolean;
}

/** tmux failed; `stderr` says why. */
export class TmuxError extends Error {
  override name = "TmuxError";
  /** The server did not answer in time (stopped, wedged): nothing is known about its panes. */
  readonly unanswered: boolean;
  constructor(message: string, { unanswered = false }: { unanswered?: boolean } = {}) {
    super(message);
    this.unanswered = unanswered;
  }
  /** No server runs on the socket (or it cannot be reached): not a failure of one pane. */
  get serverDown(): boolean {
    return /no server running|error connecting|failed to connect|No such file or directory|server exited unexpectedly|lost server/i
      .test(this.message);
  }
}

/**
 * `-u` first: without a UTF-8 locale (cron, systemd, `env -i`) tmux turns the tabs of `-F`
 * formats into underscores, and every pane listing would come back unreadable.
 */
function serverArgs(server: TmuxServer): string[] {
  if ("socketName" in server) return ["-u", "-L", server.socketName];
  if ("socketPath" in server) return ["-u", "-S", server.socketPath];
  return ["-u"];
}

/**
 * How long a tmux command may take. A server answers in milliseconds; one that is stopped
 * (SIGSTOP), swapped out or wedged never does, and a caller that waited for it would stop with it
 * (a daemon tick, `status`, every other session behind it).
 */
export const TMUX_TIMEOUT_MS = 5000;

/**
 * Runs `tmux <args>` on `server` and returns its stdout. Throws {@linkcode TmuxError}, also when
 * the server does not answer within `timeoutMs` (then `unanswered`): what such a server's panes
 * are is unknown.
 */
export async function tmux(
  server: TmuxServer,
  args: string[],
  { timeoutMs = TMUX_TIMEOUT_MS }: { timeoutMs?: number } = {},
): Promise<string> {
  let result;
  try {
    result = await runProgram("tmux", [...serverArgs(server), ...args], { timeoutMs });
  } catch (error) {
    if (error instanceof ProgramMissingError) throw new TmuxError("tmux is not installed");
    throw error;
  }
  if (result.signal === "SIGKILL") {
    throw new TmuxError(`tmux ${args[0]}: the server did not answer within ${timeoutMs} ms`, {
      unanswered: true,
    });
  }
  if (!result.success) {
    throw new TmuxError(result.stderr.trim() || `tmux ${args[0]} exited with code ${result.code}`);
  }
  return result.stdout;
}

const PANE_FORMAT = [
  "#{pane_id}",
  "#{session_name}",
  "#{session_name}:#{window_index}.#{pane_index}",
  "#{pane_current_command}",
  "#{pane_pid}",
  "#{pane_dead}",
  "#{pane_synchronized}",
  "#{pane_in_mode}",
  "#{pane_input_off}",
  "#{pane_width}",
  "#{@lifeline}",
].join("\t");

function parsePaneLine(line: string): PaneInfo | undefined {
  const [id, session, position, command, pid, dead, synced, mode, inputOff, width, optOut] = line
    .split("\t");
  if (!id?.startsWith("%") || session === undefined) return undefined;
  return {
    id,
    session,
    position: position ?? "",
    command: command ?? "",
    pid: Number(pid),
    dead: dead === "1",
    synchronized: synced === "1",
    inMode: mode === "1",
    inputOff: inputOff === "1",
    width: Number(width) || 0,
    optedOut: optOut?.trim().toLowerCase() === "off",
  };
}

/**
 * Every pane on the server, or those of one target (a session name or a `%pane`). A server that is
 * not running has no panes; with `strict`, that throws a {@linkcode TmuxError} instead, so a
 * watcher can tell "no panes" from "no server".
 */
export async function listPanes(
  server: TmuxServer,
  target?: string,
  { strict = false }: { strict?: boolean } = {},
): Promise<PaneInfo[]> {
  if (target?.startsWith("%") && !strict) {
    const pane = await paneInfo(server, target);
    return pane ? [pane] : [];
  }
  let output: string;
  try {
    output = await tmux(
      server,
      target?.startsWith("%")
        ? ["display-message", "-p", "-t", target, PANE_FORMAT]
        : target
        ? ["list-panes", "-s", "-t", `=${target}`, "-F", PANE_FORMAT]
        : ["list-panes", "-a", "-F", PANE_FORMAT],
    );
  } catch (error) {
    if (
      error instanceof TmuxError && !strict &&
      (error.serverDown || /can't find/i.test(error.message))
    ) {
      return [];
    }
    throw error;
  }
  return output.split("\n").map(parsePaneLine).filter((p): p is PaneInfo => p !== undefined);
}

/** One pane by id, or undefined when it is gone. */
export async function paneInfo(server: TmuxServer, id: string): Promise<PaneInfo | undefined> {
  let line: string;
  try {
    line = (await tmux(server, ["display-message", "-p", "-t", id, PANE_FORMAT])).trim();
  } catch (error) {
    if (error instanceof TmuxError) return undefined;
    throw error;
  }
  // tmux 3.3 answers a pane that does not exist with an empty line (and success), or with
  // another pane's: only the pane asked about counts.
  if (line === "") return undefined;
  const info = parsePaneLine(line);
  return info?.id === id ? info : undefined;
}

/**
 * The pane's text the way spec/error-recovery.md §5.1 captures it: the visible screen plus 20
 * lines of history (`capture-pane -p -S -20`).
 */
export function capturePane(
  server: TmuxServer,
  id: string,
  { escapes = false }: { escapes?: boolean } = {},
): Promise<string> {
  return tmux(server, ["capture-pane", "-p", ...(escapes ? ["-e"] : []), "-t", id, "-S", "-20"]);
}

/** Types `text` literally (`send-keys -l`): no key names are interpreted. */
export async function sendLiteral(server: TmuxServer, id: string, text: string): Promise<void> {
  await tmux(server, ["send-keys", "-t", id, "-l", text]);
}

/** Presses Enter, on its own, so it arrives as a key and not as part of a paste. */
export async function sendEnter(server: TmuxServer, id: string): Promise<void> {
  await tmux(server, ["send-keys", "-t", id, "Enter"]);
}

/** Presses Backspace `count` times (to take back text lifeline typed). */
export async function sendBackspaces(server: TmuxServer, id: string, count: number): Promise<void> {
  await tmux(server, ["send-keys", "-t", id, "-N", String(count), "BSpace"]);
}

/** A running tmux server: its socket and its process. */
export interface ServerIdentity {
  socketPath: string;
  pid: number;
}

/** Which server answers on `server`'s socket, or null when none runs there. */
export async function serverIdentity(server: TmuxServer): Promise<ServerIdentity | null> {
  try {
    const [path, pid] = (await tmux(server, ["display-message", "-p", "#{socket_path}\t#{pid}"]))
      .trim().split("\t");
    return path ? { socketPath: path, pid: Number(pid) } : null;
  } catch (error) {
    if (error instanceof TmuxError) return null;
    throw error;
  }
}

/**
 * The socket a server is reached on, the way tmux itself finds it: `-S` as given, `-L NAME` under
 * `$TMUX_TMPDIR/tmux-<uid>/`, and otherwise the socket of `$TMUX` (inside a pane) or `default`.
 * Different ways of naming one server give one path, and different servers different paths.
 */
export function expectedSocketPath(
  server: TmuxServer,
  env: Readonly<Record<string, string>>,
  uid: number | null,
): string {
  if ("socketPath" in server) return server.socketPath;
  const dir = `${(env.TMUX_TMPDIR || "/tmp").replace(/\/+$/, "")}/tmux-${uid ?? 0}`;
  if ("socketName" in server) return `${dir}/${server.socketName}`;
  const inside = env.TMUX?.split(",")[0];
  return inside ? inside : `${dir}/default`;
}

/** The server's socket path (`#{socket_path}`), or undefined when it is not running. */
export async function socketPath(server: TmuxServer): Promise<string | undefined> {
  try {
    const lines = await tmux(server, ["list-sessions", "-F", "#{socket_path}"]);
    return lines.split("\n")[0]?.trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sets (or clears) the user's hands-off for a pane, or its whole window: the user option
 * `@lifeline off`, which the watcher reads in every pane listing.
 */
export async function setOptOut(
  server: TmuxServer,
  pane: string,
  { off, window }: { off: boolean; window: boolean },
): Promise<void> {
  const scope = window ? "-w" : "-p";
  await tmux(
    server,
    off
      ? ["set-option", scope, "-t", pane, "@lifeline", "off"]
      : ["set-option", scope, "-u", "-t", pane, "@lifeline"],
  );
}
