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
}

/** tmux failed; `stderr` says why. */
export class TmuxError extends Error {
  override name = "TmuxError";
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

/** Runs `tmux <args>` on `server` and returns its stdout. Throws {@linkcode TmuxError}. */
export async function tmux(server: TmuxServer, args: string[]): Promise<string> {
  let result;
  try {
    result = await runProgram("tmux", [...serverArgs(server), ...args]);
  } catch (error) {
    if (error instanceof ProgramMissingError) throw new TmuxError("tmux is not installed");
    throw error;
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
].join("\t");

function parsePaneLine(line: string): PaneInfo | undefined {
  const [id, session, position, command, pid, dead] = line.split("\t");
  if (!id?.startsWith("%") || session === undefined) return undefined;
  return {
    id,
    session,
    position: position ?? "",
    command: command ?? "",
    pid: Number(pid),
    dead: dead === "1",
  };
}

/**
 * Every pane on the server, or those of one target (a session name or a `%pane`). A server that is
 * not running has no panes.
 */
export async function listPanes(server: TmuxServer, target?: string): Promise<PaneInfo[]> {
  if (target?.startsWith("%")) {
    const pane = await paneInfo(server, target);
    return pane ? [pane] : [];
  }
  let output: string;
  try {
    output = await tmux(
      server,
      target
        ? ["list-panes", "-s", "-t", `=${target}`, "-F", PANE_FORMAT]
        : ["list-panes", "-a", "-F", PANE_FORMAT],
    );
  } catch (error) {
    if (
      error instanceof TmuxError &&
      /no server running|error connecting|can't find/i.test(error.message)
    ) {
      return [];
    }
    throw error;
  }
  return output.split("\n").map(parsePaneLine).filter((p): p is PaneInfo => p !== undefined);
}

/** One pane by id, or undefined when it is gone. */
export async function paneInfo(server: TmuxServer, id: string): Promise<PaneInfo | undefined> {
  try {
    return parsePaneLine(
      (await tmux(server, ["display-message", "-p", "-t", id, PANE_FORMAT])).trim(),
    );
  } catch (error) {
    if (error instanceof TmuxError) return undefined;
    throw error;
  }
}

/**
 * The pane's text the way spec/error-recovery.md §5.1 captures it: the visible screen plus 20
 * lines of history (`capture-pane -p -S -20`).
 */
export function capturePane(server: TmuxServer, id: string): Promise<string> {
  return tmux(server, ["capture-pane", "-p", "-t", id, "-S", "-20"]);
}

/** Types `text` literally (`send-keys -l`): no key names are interpreted. */
export async function sendLiteral(server: TmuxServer, id: string, text: string): Promise<void> {
  await tmux(server, ["send-keys", "-t", id, "-l", text]);
}

/** Presses Enter, on its own, so it arrives as a key and not as part of a paste. */
export async function sendEnter(server: TmuxServer, id: string): Promise<void> {
  await tmux(server, ["send-keys", "-t", id, "Enter"]);
}

/** True when the server has a session or pane by this name (`has-session`). */
export async function hasSession(server: TmuxServer, target: string): Promise<boolean> {
  try {
    await tmux(server, ["has-session", "-t", target]);
    return true;
  } catch (error) {
    if (error instanceof TmuxError) return false;
    throw error;
  }
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
