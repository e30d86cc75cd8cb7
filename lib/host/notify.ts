/**
 * Telling the user what needs a human (the watcher refused or gave up, a login or billing
 * problem, a session died, a breaker opened): a message on the tmux client that shows the pane,
 * the terminal bell, and `notify.command` when configured (an argv list run with the message as
 * its last argument and `LIFELINE_EVENT`, `LIFELINE_PANE`, `LIFELINE_SESSION` in its
 * environment: `notify-send`, `osascript`, `terminal-notifier`, or `curl` to a push service).
 * lifeline itself opens no connection. A notification that cannot be delivered is not an error
 * of what it reports: its failures are returned, for the caller's log.
 *
 * @module
 */

import { runProgram } from "./process.ts";
import { tmux, type TmuxServer } from "./tmux.ts";

/** One thing to tell the user. */
export interface Notice {
  /** What happened, for scripts: `refused`, `gave_up`, `permanent`, `scavenged`, `breaker_open`… */
  event: string;
  message: string;
  /** The tmux pane it is about, and its server, to show it on the client that shows the pane. */
  pane?: { id: string; server: TmuxServer };
  session?: string;
}

/** How notifications go out. */
export interface NotifySettings {
  /** `notify.command`: an argv list; the message is added as its last argument. */
  command: readonly string[] | null;
  /** Whether to show the message on the pane's tmux clients, with their bell. */
  tmux: boolean;
}

/** How long a notify command may run. */
const COMMAND_TIMEOUT_MS = 10_000;

/** Sends a notice every configured way. Returns what failed (empty when all went out). */
export async function notify(notice: Notice, settings: NotifySettings): Promise<string[]> {
  const failures: string[] = [];
  const text = `lifeline: ${notice.message}`;
  if (settings.tmux && notice.pane) {
    const { id, server } = notice.pane;
    try {
      await tmux(server, ["display-message", "-d", "10000", "-t", id, text.slice(0, 300)]);
      // The bell rings on the terminals of the clients that show the pane's session.
      const session = (await tmux(server, ["display-message", "-p", "-t", id, "#{session_name}"]))
        .trim();
      const ttys = (await tmux(server, ["list-clients", "-t", session, "-F", "#{client_tty}"]))
        .split("\n").filter(Boolean);
      for (const tty of ttys) {
        await Deno.writeTextFile(tty, "\x07", { append: true }).catch(() => {});
      }
    } catch (error) {
      failures.push(`tmux: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (settings.command && settings.command.length > 0) {
    const [program, ...args] = settings.command;
    try {
      const result = await runProgram(program!, [...args, notice.message], {
        env: {
          LIFELINE_EVENT: notice.event,
          LIFELINE_PANE: notice.pane?.id ?? "",
          LIFELINE_SESSION: notice.session ?? "",
        },
        timeoutMs: COMMAND_TIMEOUT_MS,
      });
      if (!result.success) {
        failures.push(
          `notify.command exited ${result.signal ?? result.code}: ${
            result.stderr.trim().slice(0, 200)
          }`,
        );
      }
    } catch (error) {
      failures.push(`notify.command: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return failures;
}
