/**
 * `lifeline status`: what lifeline knows right now, in one screen or one JSON object: the project
 * (and, without --root, every other registered one), the tmux watchers' panes, and whether the
 * watcher and the daemon run. The facts come from lib; this file gathers and renders them.
 *
 * @module
 */

import { type Context, EXIT } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { joinPath } from "../lib/core/path.ts";
import { adviceStatus } from "../lib/advice/advice_status.ts";
import { harnessStatus } from "../lib/harness/harness_status.ts";
import { sessionsStatus } from "../lib/sessions/session_status.ts";
import { type ProjectView, renderStatus } from "../lib/sessions/status_text.ts";
import { loadConfig } from "../lib/state/config.ts";
import { runningInstances } from "../lib/state/instances.ts";
import { readKillSwitch } from "../lib/state/kill_switch.ts";
import { killSwitchPath, stateDir } from "../lib/state/layout.ts";
import { projectRoot, rootSource } from "../lib/state/project_root.ts";
import { registeredRoots } from "../lib/state/roots.ts";
import { describeError, listNames, readState } from "../lib/state/store.ts";
import { watchStateCodec } from "../lib/watch/state.ts";

export const help = `Usage: lifeline status [--root DIR] [--json]

Shows, for the project and this user:

  sessions        id, heartbeat age, alive / dead / scavenged / unknown, tmux pane
  watched panes   what the tmux watcher tracks: state, limited until, attempts, refusals
  breakers        open circuit breakers (.EnjoyHarness/.circuit-breaker-task-*)
  iterations      the loop harness's global iteration budget: at max_iterations every task's
                  failure is answered "global breaker open" until \`lifeline fail reset --global\`
  tools           tools at or over the fallback threshold (consecutive failures)
  outbox          advice waiting for the next prompt
  kill switch     whether the self-heal reminder is on
  watcher, daemon whether \`lifeline watch tmux\` and \`lifeline daemon stale\` run (their locks)

Without --root, the project is the one around the working directory (the nearest directory
with .claude/, up to the git top level; else the git top level; else the working directory), and
every other project a heartbeat registered is shown after it. --root shows that project alone.

Options:
  --root DIR   the project (default: found from the working directory, as above)
  --json       everything as one JSON object; "other_projects" holds the registered ones
  -h, --help`;

/** Not printed with --json: what the table needs beyond the JSON. */
const FINISHED = Symbol("finished sessions");

/** One project's part of the status. */
async function projectStatus(ctx: Context, root: string) {
  const config = await loadConfig(ctx.env, root);
  const { sessions, finished, open } = await sessionsStatus(root, {
    now: ctx.now(),
    staleAfterSeconds: config.stale.afterSeconds,
    agentCommands: config.watch.agentCommands,
    hostname: ctx.hostname(),
  });
  const harness = await harnessStatus(root);
  const advice = await adviceStatus(root, open, { threshold: config.toolFallback.threshold });
  return {
    root,
    sessions,
    ...harness,
    ...advice,
    /** The finished sessions, which the table counts instead of listing. */
    [FINISHED]: { ids: finished, pruneAfterDays: config.stale.pruneAfterDays },
  };
}

/** The panes the tmux watchers track, from their state files. */
async function watchedPanes(env: Readonly<Record<string, string>>) {
  const watched = [];
  const own = stateDir(env);
  const dir = joinPath(own, "watch");
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  for (const name of (await listNames(dir)).filter((n) => n.endsWith(".json"))) {
    // A watcher's state being written or corrupt, or an older version's: doctor reports it.
    const state = await readState(joinPath(dir, name), watchStateCodec, { root: own })
      .catch(() => null);
    if (state?.kind !== "ok") continue;
    for (const pane of Object.values(state.value.panes)) {
      watched.push({
        server: state.value.server.socket,
        pane: pane.pane,
        session: pane.session,
        state: pane.state,
        signal: pane.signal ?? null,
        limited_until: iso(pane.reset_at),
        resume_at: iso(pane.resume_at),
        attempts: pane.attempts,
        resumed: pane.resumed,
        gave_up: pane.gave_up,
        paused: pane.paused === true,
        // The watcher's own words: a refusal it made, or the prompt it will not type into.
        refusal: pane.refusal ?? (pane.state === "dangerous_prompt" ? pane.reason : null),
      });
    }
  }
  return watched;
}

/** The other registered projects; one that cannot be read says why, and the rest are shown. */
async function otherProjects(ctx: Context, root: string) {
  const others = [];
  for (const other of await registeredRoots(ctx.env, { readOnly: true })) {
    if (other === root) continue;
    others.push(
      await projectStatus(ctx, other).catch((error) => ({
        root: other,
        error: describeError(error),
      })),
    );
  }
  return others;
}

/** Everything `status` reports. */
async function gatherStatus(ctx: Context, root: string, { all }: { all: boolean }) {
  const { [FINISHED]: finished, ...project } = await projectStatus(ctx, root);
  const killSwitch = await readKillSwitch(killSwitchPath(ctx.env));
  const { watchers, daemons } = await runningInstances(ctx.env);
  return {
    root: project.root,
    kill_switch: { state: killSwitch.state, path: killSwitch.path },
    sessions: project.sessions,
    watched_panes: await watchedPanes(ctx.env),
    breakers: project.breakers,
    iterations: project.iterations,
    tools_over_threshold: project.tools_over_threshold,
    outbox: project.outbox,
    watchers,
    daemons,
    other_projects: all ? await otherProjects(ctx, root) : [],
    [FINISHED]: finished,
  };
}

/** A project as the table wants it: its finished sessions in the open. */
function view<T extends { [FINISHED]: ProjectView["finished"] }>(p: T): T & ProjectView {
  return { ...p, finished: p[FINISHED] } as T & ProjectView;
}

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, { root: { type: "string" }, json: { type: "boolean" } });
  const found = await projectRoot(values.root, ctx);
  const status = await gatherStatus(ctx, found.root, { all: values.root === undefined });
  if (values.json) {
    ctx.out.json(status);
    return EXIT.ok;
  }
  const lines = renderStatus({
    ...view(status),
    found: rootSource(found, ctx.cwd),
    other_projects: status.other_projects.map((p) => "error" in p ? p : view(p)),
  });
  for (const line of lines) ctx.out.line(line);
  return EXIT.ok;
}
