/**
 * `lifeline forget <session>`: removes a session's state from the project, so that `status` stops
 * listing it (test sessions, sessions that have ended). A live session is refused.
 *
 * @module
 */

import { CliError, type Context, existingRoot, EXIT, UsageError } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { loadConfig } from "../lib/state/config.ts";
import { InvalidNameError, sessionPaths, validateName } from "../lib/state/layout.ts";
import { assessSession } from "../lib/sessions/liveness.ts";
import { pathExists, removeDir } from "../lib/state/store.ts";

export const help = `Usage: lifeline forget <session> [--force] [--root DIR] [--json]

Removes sessions/<session>/ from the project: its heartbeat, registry entry, counters, outbox and
handoff. \`lifeline status\` lists it no more. For test sessions (such as the README's examples),
and sessions that have ended.

A session that is alive is left alone: its heartbeat is fresh, or its tmux pane or agent process
is still there. It would only register again on its next tool call. --force removes it anyway.

Options:
  --force      forget it even if it is alive
  --root DIR   the project (default: .)
  --json       print {"session", "removed", "state"}
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values, positionals } = parseFlags(ctx.args, {
    force: { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  }, { maxPositionals: 1 });
  if (positionals[0] === undefined) throw new UsageError("missing the session to forget");
  let id: string;
  try {
    id = validateName("session id", positionals[0]);
  } catch (error) {
    if (error instanceof InvalidNameError) throw new UsageError(error.message);
    throw error;
  }
  const root = await existingRoot(values.root, ctx.cwd);
  const dir = sessionPaths(root, id).dir;
  if (!await pathExists(dir)) {
    throw new CliError(`no session "${id}" in ${root}`, "`lifeline status` lists the sessions");
  }
  const config = await loadConfig(ctx.env, root);
  const liveness = await assessSession(root, id, {
    now: ctx.now(),
    staleAfterSeconds: config.stale.afterSeconds,
    pruneAfterSeconds: config.stale.pruneAfterDays * 86_400,
    panes: new Map(),
  });
  if (liveness.state === "alive" && !values.force) {
    throw new CliError(
      `session ${id} is alive (${liveness.reason}); left it as it is`,
      "forget a session once it has ended, or add --force",
    );
  }
  await removeDir(dir, { root });
  const removed = `sessions/${id}`;
  if (values.json) ctx.out.json({ session: id, removed, state: liveness.state });
  else ctx.out.line(`Forgot session ${id}: removed ${removed}.`);
  return EXIT.ok;
}
