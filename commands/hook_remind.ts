/**
 * `lifeline hook remind`: on every prompt (UserPromptSubmit), reminds the agent of the operating
 * rules that keep tool calls from breaking (spec/self-heal.md), and delivers any advice waiting in
 * the session's outbox. Silent while the kill switch is off.
 *
 * @module
 */

import type { Context } from "../lib/core/cli.ts";
import {
  contextOutput,
  HOOK_FLAGS_HELP,
  type HookOutput,
  type HookRequest,
  logHookProblem,
  runHook,
} from "../lib/claude/hook_io.ts";
import { readKillSwitch } from "../lib/state/kill_switch.ts";
import { killSwitchPath } from "../lib/state/layout.ts";
import { adviceBlock, gatherAdvice } from "../lib/advice/pending_advice.ts";

export const help = `Usage: lifeline hook remind [--root DIR] [--background]

Claude Code hook for UserPromptSubmit. Adds the self-heal reminder to the model's context: close
every tag and parameter, one tool call per message after a malformed one, switch channel after
two malformed attempts, pass long content as a file, stop and report after three failed
attempts. Also delivers (once) any advice that other lifeline hooks left in the session's outbox.

Prints nothing while self-heal is off (\`lifeline selfheal off\`). When the kill switch cannot be
checked, it reminds anyway (fail open).

${HOOK_FLAGS_HELP}`;

/** The reminder, in lifeline's words, carrying the operating rules of spec/self-heal.md. */
export const REMINDER = `[SELF-HEAL] Tool-call rules for this session:
1. Close every tag and every parameter of a tool call before ending the message.
2. After a malformed tool call, send one tool call per message until calls succeed again.
3. If the same action comes out malformed twice through one channel, switch channel: Bash <-> a script file; an edit tool (Edit/Write) <-> a small script that does the string replacement.
4. Write long content (large edits, long prompts, commit message bodies) to a file first and pass its path.
5. After 3 failed attempts at the same step, stop retrying: report where it is stuck and what was tried.
(The user can turn these reminders off with \`lifeline selfheal off\`.)`;

/** Reminds, unless the kill switch is off; delivers pending advice. */
export async function handle(request: HookRequest): Promise<HookOutput | null> {
  const { input, root, ctx } = request;
  const killSwitch = await readKillSwitch(killSwitchPath(ctx.env));
  if (killSwitch.state === "off") return null;
  let advice = "";
  try {
    advice = adviceBlock(await gatherAdvice(request));
  } catch (error) {
    // The reminder still goes out; the advice stays where it is for the next hook.
    await logHookProblem(ctx.env, {
      command: "hook remind",
      message: "could not gather pending advice",
      error,
      session: input.session_id,
      root,
    });
  }
  return contextOutput(input.hook_event_name, advice ? `${REMINDER}\n\n${advice}` : REMINDER);
}

export function run(ctx: Context): Promise<number> {
  return runHook(ctx, "remind", handle);
}
