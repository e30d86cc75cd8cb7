/**
 * What `fail handle` tells the user: the handling that opened a task's breaker, or spent the
 * loop's iteration budget, needs a person; the answers after it (breaker open, budget spent) do
 * not tell again, so it is one notification per episode. It goes to `notify.command`, and, when
 * `fail handle` runs inside tmux, to the tmux client that shows the loop's pane ($TMUX_PANE):
 * the loop has no pane of its own to show it on otherwise, and another client would show it to
 * the wrong terminal.
 *
 * @module
 */

import { type Notice, notify } from "../host/notify.ts";
import type { Config } from "../state/config.ts";
import { logToOwnLog } from "../state/own_log.ts";
import type { HandleOutcome } from "./outcome.ts";
import { command, successCommand } from "./wording.ts";

/** The notice for an outcome, or null when it needs no one. */
export function handlingNotice(outcome: HandleOutcome, root: string): Omit<Notice, "pane"> | null {
  if (outcome.kind !== "handled" || outcome.dryRun) return null;
  const { decision, task, skill, iteration } = outcome;
  const where = `fail handle in ${root}: ${task} (${skill})`;
  if (decision.globalBreaker) {
    return {
      event: "budget_spent",
      message:
        `${where}: the loop's iteration budget is spent (${iteration.current}/${iteration.max}); ` +
        `every task stops until \`${command("fail reset --global", root)}\``,
    };
  }
  if (decision.taskBreaker) {
    return {
      event: "breaker_open",
      message:
        `${where} failed ${decision.count} times: its circuit breaker is open and the loop ` +
        `stops this task; fix the cause, then \`${successCommand(task, skill, root)}\``,
    };
  }
  return null;
}

/** Sends the outcome's notice, if it has one; what fails to go out goes to lifeline's own log. */
export async function notifyHandling(
  outcome: HandleOutcome,
  { config, env, root }: { config: Config; env: Readonly<Record<string, string>>; root: string },
): Promise<void> {
  const notice = handlingNotice(outcome, root);
  if (!notice) return;
  const socket = env.TMUX?.split(",")[0];
  const pane = socket && env.TMUX_PANE
    ? { id: env.TMUX_PANE, server: { socketPath: socket } }
    : null;
  const failures = await notify({ ...notice, ...(pane ? { pane } : {}) }, config.notify);
  for (const failure of failures) {
    await logToOwnLog(env, {
      command: "fail handle",
      message: `could not notify: ${failure}`,
      root,
    });
  }
}
