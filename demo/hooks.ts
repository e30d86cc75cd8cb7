/**
 * Demo: the hooks Claude Code runs, fed with real payloads captured from Claude Code 2.1.328.
 *
 * @module
 */

import { hookInput } from "../tests/helpers/fixtures.ts";
import { ownLogLines } from "../tests/helpers/lifeline.ts";
import { expect, heading, lifeline, say, show, step } from "./narrate.ts";

/** Where the demo runs: a scratch project and a scratch HOME. */
export interface DemoPlace {
  project: string;
  home: string;
  env: Record<string, string>;
}

/** Hooks with real payloads: remind, heartbeat, the kill switch, failing open. */
export async function demoHooks({ project, home, env }: DemoPlace): Promise<void> {
  heading("Hooks: what Claude Code sends, and what it gets back");
  const prompt = { ...await hookInput("hh-tool-ok", "UserPromptSubmit"), cwd: project };
  step("UserPromptSubmit: a real payload from Claude Code 2.1.328 goes to `hook remind`");
  show(JSON.stringify(prompt), "  > ");
  const reminded = await lifeline(["hook", "remind"], { stdin: JSON.stringify(prompt), env });
  const context = JSON.parse(reminded.stdout).hookSpecificOutput.additionalContext as string;
  say("  Claude Code puts this into the model's context as:");
  show(`UserPromptSubmit hook additional context: ${context.split("\n")[0]} …`, "  » ");

  step("PostToolUse: `hook heartbeat` (an async hook) records the session for the watchers");
  const tool = { ...await hookInput("hh-tool-ok", "PostToolUse"), cwd: project };
  await lifeline(["hook", "heartbeat"], {
    stdin: JSON.stringify(tool),
    env: { ...env, TMUX_PANE: "%3", TMUX: "/tmp/tmux-1000/default,4242,0" },
  });
  const sessionDir = `${project}/sessions/${tool.session_id}`;
  say(`  sessions/${tool.session_id}/heartbeat:`);
  show(await Deno.readTextFile(`${sessionDir}/heartbeat`));
  say(`  sessions/${tool.session_id}/session.json:`);
  show(await Deno.readTextFile(`${sessionDir}/session.json`));

  step("The kill switch: `selfheal off` silences the reminder everywhere, at once");
  await lifeline(["selfheal", "off"], { env });
  const silent = await lifeline(["hook", "remind"], { stdin: JSON.stringify(prompt), env });
  expect(silent.stdout === "", "remind is silent while self-heal is off");
  await lifeline(["selfheal", "on"], { env });

  step("Advice left in a session's outbox (hook track writes it) is delivered once");
  // The prompt and the tool call above belong to one session, whose directory now exists.
  await Deno.writeTextFile(
    `${sessionDir}/outbox.jsonl`,
    JSON.stringify({
      ts: new Date().toISOString(),
      source: "demo",
      text:
        "[MODEL FALLBACK] 3 overloaded turns in a row on haiku: switch to sonnet (/model sonnet).",
    }) + "\n",
  );
  const delivered = await lifeline(["hook", "remind"], {
    stdin: JSON.stringify(prompt),
    env,
    quiet: true,
  });
  show(JSON.parse(delivered.stdout).hookSpecificOutput.additionalContext.split("\n\n")[1]);
  const again = await lifeline(["hook", "remind"], {
    stdin: JSON.stringify(prompt),
    env,
    quiet: true,
  });
  expect(!again.stdout.includes("MODEL FALLBACK"), "advice is delivered exactly once");
  say("  A second prompt gets the reminder only: the advice was delivered once.");

  step("Failing open: garbage on stdin gives exit 0, no output, one line in lifeline's own log");
  const broken = await lifeline(["hook", "heartbeat"], { stdin: '{"session_id": "tru', env });
  expect(broken.code === 0 && broken.stdout === "", "a broken input fails open");
  const log = await ownLogLines(home);
  show(JSON.stringify(log.at(-1)), "  log: ");
}
