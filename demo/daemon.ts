/**
 * Demo: a session dies silently (its tmux pane is killed, its heartbeat goes stale), the daemon
 * rescues its findings, and the next session is offered the handoff.
 *
 * @module
 */

import { hookInput, transcriptPath } from "../tests/helpers/fixtures.ts";
import { agentScreen } from "../tests/helpers/screens.ts";
import { withTmux } from "../tests/helpers/tmux_harness.ts";
import { startHookAgent } from "../tests/helpers/hook_agent_process.ts";
import type { DemoPlace } from "./hooks.ts";
import { expect, heading, lifeline, say, show, step } from "./narrate.ts";

/** A dead session scavenged, and its handoff offered to the next session. */
export async function demoDaemon({ project, env }: DemoPlace, scratch: string): Promise<void> {
  heading("daemon stale: a session that died silently, and what it was doing");
  await withTmux(scratch, async (tmux) => {
    const pane = await tmux.addAgent(agentScreen({ conversation: ["❯ run a failing command"] }));
    await tmux.addAgent(agentScreen({ conversation: ["❯ another session keeps the server up"] }));
    const transcript = `${scratch}/transcript.jsonl`;
    await Deno.copyFile(transcriptPath("hh-tool-fail"), transcript);
    step("A session registers through its heartbeat, in tmux pane " + pane.id);
    const tool = {
      ...await hookInput("hh-tool-fail", "PostToolUseFailure"),
      cwd: project,
      transcript_path: transcript,
    };
    // The agent: a process that runs its hook through `sh -c`, as Claude Code does.
    say("  $ lifeline hook heartbeat < input.json   (run by the agent in the pane)");
    const agent = await startHookAgent(scratch, JSON.stringify(tool), {
      ...env,
      TMUX_PANE: pane.id,
      TMUX: `${await tmux.socketPath()},1,0`,
    });
    const sessionDir = `${project}/sessions/${tool.session_id}`;
    step("Its pane is killed with the agent in it, and its heartbeat is 15 minutes old");
    await tmux.killPane(pane);
    await agent.stop();
    await Deno.writeTextFile(`${sessionDir}/heartbeat`, `${Math.floor(Date.now() / 1000) - 900}\n`);
    await lifeline(["daemon", "stale", "--once", "--root", project], { env });
    const handoff = await Deno.readTextFile(`${sessionDir}/handoffs/scavenged.md`);
    say(`  sessions/${tool.session_id}/handoffs/scavenged.md (first lines):`);
    show(handoff.split("\n").slice(0, 22).join("\n"));
    step("The next session starts: hook crash offers the handoff, once");
    const start = { ...await hookInput("hh-text", "SessionStart"), cwd: project };
    const first = await lifeline(["hook", "crash"], {
      stdin: JSON.stringify(start),
      env,
      quiet: true,
    });
    const context = JSON.parse(first.stdout).hookSpecificOutput.additionalContext as string;
    show(context);
    expect(context.includes("handoffs/scavenged.md"), "the handoff is offered");
    const second = await lifeline(["hook", "crash"], {
      stdin: JSON.stringify({ ...start, session_id: "yet-another-session" }),
      env,
      quiet: true,
    });
    expect(!second.stdout.includes("scavenged.md"), "and only once");
    say("  A later session is not offered it again.");
  });
}
