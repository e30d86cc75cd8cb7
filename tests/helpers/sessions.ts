/**
 * Sessions registered the way `hook heartbeat` registers them, for tests of what reads them.
 *
 * @module
 */

/**
 * Writes `sessions/<id>/heartbeat` (`heartbeatAgo` seconds old) and `session.json` (first seen
 * `firstSeenAgo` seconds ago; `record` sets any other field).
 */
export async function registerSession(
  project: string,
  id: string,
  { heartbeatAgo, transcript = null, agentPid = 999_999_97, firstSeenAgo = 0, record = {} }: {
    heartbeatAgo: number;
    transcript?: string | null;
    /** The recorded agent; the default is a pid no system hands out. */
    agentPid?: number;
    firstSeenAgo?: number;
    record?: Record<string, unknown>;
  },
): Promise<string> {
  const dir = `${project}/sessions/${id}`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/heartbeat`, `${Math.floor(Date.now() / 1000) - heartbeatAgo}\n`);
  await Deno.writeTextFile(
    `${dir}/session.json`,
    JSON.stringify({
      session_id: id,
      root: project,
      cwd: project,
      transcript_path: transcript,
      tmux_pane: null,
      tmux_socket: null,
      agent_pid: agentPid,
      first_seen: new Date(Date.now() - firstSeenAgo * 1000).toISOString(),
      last_seen: new Date().toISOString(),
      last_event: "PostToolUse",
      ...record,
    }),
  );
  return dir;
}
