/**
 * The hook calls `deno task bench` times, on the state they find in a real project: real payloads
 * from the fixtures, and for `hook crash` a project with 200 sessions registered as `hook
 * heartbeat` registers them. Shared with the tests that guard the hooks' hot path.
 *
 * @module
 */

import { hookInput, transcriptPath } from "../tests/helpers/fixtures.ts";
import { registerSession } from "../tests/helpers/sessions.ts";
import type { LatencyCase } from "./hook_latency.ts";

/** The timed hook calls, for a project at `project` (which must exist). */
export async function hookCases(project: string): Promise<LatencyCase[]> {
  const withCwd = (input: Record<string, unknown>) => JSON.stringify({ ...input, cwd: project });
  return [
    {
      name: "hook heartbeat (PostToolUse)",
      args: ["hook", "heartbeat"],
      stdin: withCwd(await hookInput("hh-tool-ok", "PostToolUse")),
    },
    {
      name: "hook remind (UserPromptSubmit)",
      args: ["hook", "remind"],
      stdin: withCwd(await hookInput("hh-tool-ok", "UserPromptSubmit")),
    },
    {
      name: "hook track (PostToolUse)",
      args: ["hook", "track"],
      stdin: withCwd(await hookInput("hh-tool-ok", "PostToolUse")),
    },
    {
      name: "hook track (PostToolUseFailure)",
      args: ["hook", "track"],
      // One session's count just climbs; the advice is given once, at the crossing.
      stdin: withCwd(await hookInput("hh-tool-fail", "PostToolUseFailure")),
    },
    {
      name: "hook crash (SessionStart, 200 sessions)",
      args: ["hook", "crash"],
      stdin: withCwd(await hookInput("hh-text", "SessionStart")),
      prepare: () => populateSessions(project, 200),
    },
  ];
}

/**
 * `count` sessions, each with a fresh loop state, a heartbeat and a registry entry as `hook
 * heartbeat` writes it, whose transcript is a real one (so the previous session's transcript tail
 * is read, as in life).
 */
export async function populateSessions(root: string, count: number): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  const transcript = `${root}/transcript.jsonl`;
  await Deno.copyFile(transcriptPath("hh-tool-fail"), transcript);
  for (let i = 0; i < count; i++) {
    const dir = await registerSession(root, `bench-${i}`, { heartbeatAgo: 0, transcript });
    await Deno.writeTextFile(
      `${dir}/ralph.json`,
      JSON.stringify({ active: true, last_checked_at: now, iteration: i }),
    );
  }
}
