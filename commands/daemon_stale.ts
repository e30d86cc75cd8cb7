/**
 * `lifeline daemon stale`: finds sessions that died silently and rescues their unsaved findings
 * from the transcript into `sessions/<id>/handoffs/scavenged.md`, which `hook crash` offers to the
 * next session (spec/error-recovery.md §5.3).
 *
 * @module
 */

import { CliError, type Context, existingRoot, EXIT } from "../lib/core/cli.ts";
import { type Config, loadConfig } from "../lib/state/config.ts";
import { integerFlag, parseFlags } from "../lib/core/flags.ts";
import { joinPath } from "../lib/core/path.ts";
import { sessionPaths } from "../lib/state/layout.ts";
import { assessSession, type PaneIndex, type SessionAssessment } from "../lib/sessions/liveness.ts";
import { listSessions } from "../lib/sessions/session_list.ts";
import { pruneSession, removeLeftover } from "../lib/sessions/prune.ts";
import { logRecovery } from "../lib/state/recovery_log.ts";
import { logToOwnLog } from "../lib/state/own_log.ts";
import { renderHandoff, scavengeFile, type TranscriptSummary } from "../lib/sessions/scavenger.ts";
import { clearFinished } from "../lib/sessions/registry.ts";
import { sleep } from "../lib/core/sleep.ts";
import { ownStateRoot } from "../lib/state/own_log.ts";
import {
  acquireInstanceLock,
  describeError,
  removeFile,
  withLock,
  writeFileAtomic,
} from "../lib/state/store.ts";

export const help =
  `Usage: lifeline daemon stale [--root DIR]... [--interval 60] [--stale-after 300]
                            [--once] [--json]

Finds sessions that died silently and rescues what they were doing. Each tick it checks every
sessions/<id>/ under each root. A session is dead when its heartbeat is older than --stale-after
seconds and it has lost its host: its agent process (pid and start time, from session.json) is
dead or now another program, or, with no process to go by, its tmux pane is gone. A fresh
heartbeat, or a live agent process, is alive; a tmux server that does not answer (no server, a
removed socket) proves nothing either way.

For a dead session it streams the transcript and writes sessions/<id>/handoffs/scavenged.md:
facts (cwd, branch, model, times), the last prompts and replies, open todos, files edited,
unresolved tool errors, the last API error and compactions, with secrets redacted. Then it sets
sessions/<id>/status to "scavenged", and leaves it so until the session's own heartbeat hook marks
it alive again. \`lifeline hook crash\` offers the handoff to the next session, once.

Finished sessions (ended, or scavenged with the handoff delivered) idle for longer than
stale.pruneAfterDays (default 7) are deleted. One session that cannot be checked is logged and
skipped; the others go on.

Options:
  --root DIR          a project to watch (repeatable; default: .)
  --interval SECONDS  seconds between ticks (default: stale.intervalSeconds, 60)
  --stale-after SECS  heartbeat age that makes a session a suspect (default: 300)
  --once              one tick, then exit
  --json              one JSON object per session per tick:
                      {"ts","root","session","state","heartbeat_age","action","reason"}
  -h, --help

One daemon per set of roots; a second exits 1 naming the first.`;

/** Parsed arguments. */
export interface DaemonArgs {
  roots: string[];
  intervalSeconds?: number;
  staleAfterSeconds?: number;
  once: boolean;
  json: boolean;
}

/** Parses `daemon stale` arguments. Throws UsageError. */
export function parse(args: readonly string[]): DaemonArgs {
  const { values } = parseFlags(args, {
    root: { type: "string", multiple: true },
    interval: { type: "string" },
    "stale-after": { type: "string" },
    once: { type: "boolean" },
    json: { type: "boolean" },
  });
  return {
    roots: (values.root as string[] | undefined) ?? ["."],
    ...(values.interval !== undefined
      ? { intervalSeconds: integerFlag("interval", values.interval, 60, { min: 1, max: 86_400 }) }
      : {}),
    ...(values["stale-after"] !== undefined
      ? { staleAfterSeconds: integerFlag("stale-after", values["stale-after"], 300, { min: 1 }) }
      : {}),
    once: values.once === true,
    json: values.json === true,
  };
}

interface Daemon {
  ctx: Context;
  args: DaemonArgs;
  config: Config;
  staleAfter: number;
  /** Entries of sessions/ already reported as not sessions, so each is logged once. */
  reported: Set<string>;
}

function emit(d: Daemon, fields: Record<string, unknown> & { action: string; reason: string }) {
  const ts = new Date(d.ctx.now()).toISOString();
  if (d.args.json) d.ctx.out.json({ ts, ...fields });
  else if (fields.action !== "none") {
    d.ctx.out.line(
      `${ts} ${fields.root}: session ${fields.session} ${fields.action} - ${fields.reason}`,
    );
  }
}

/**
 * Writes the handoff and the status; returns the handoff's path relative to the root, or null when
 * the session is no longer dead once its transcript is read. The transcript is read first, without a
 * lock; the files are written under the registry's lock, the one the heartbeat hook takes to mark
 * a session alive again, after checking that nothing changed meanwhile.
 */
async function scavenge(
  d: Daemon,
  root: string,
  judged: SessionAssessment,
  reason: string,
  now: number,
): Promise<string | null> {
  const { id, record } = judged;
  const paths = sessionPaths(root, id);
  let summary: TranscriptSummary | null = null;
  let problem: string | undefined;
  const transcript = record?.transcript_path ?? null;
  if (!transcript) {
    problem = "session.json records no transcript path";
  } else {
    try {
      summary = await scavengeFile(transcript);
    } catch (error) {
      problem = `${transcript}: ${describeError(error)}`;
    }
  }
  const markdown = renderHandoff({
    sessionId: id,
    cwd: record?.cwd ?? null,
    transcriptPath: transcript,
    cause: reason,
    rescuedAt: new Date(now).toISOString(),
    ...(problem ? { transcriptProblem: problem } : {}),
  }, summary);
  return await withLock(paths.session, async () => {
    const again = await assessSession(root, id, {
      now: d.ctx.now(),
      staleAfterSeconds: d.staleAfter,
      panes: new Map(),
    });
    if (again.state !== "dead") return null; // it came back, or was rescued by another
    await clearFinished(root, id); // first: see markFinished
    await writeFileAtomic(paths.scavenged, markdown, { root });
    // A new handoff is unread again, even if an earlier one was offered.
    await removeFile(`${paths.scavenged}.offered`, { root }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
    await writeFileAtomic(paths.status, "scavenged\n", { root });
    return `sessions/${id}/handoffs/scavenged.md`;
  }, { root, waitMs: d.config.hooks.lockWaitMs });
}

async function tickSession(d: Daemon, root: string, id: string, index: PaneIndex): Promise<void> {
  const now = d.ctx.now();
  const settings = {
    now,
    staleAfterSeconds: d.staleAfter,
    pruneAfterSeconds: d.config.stale.pruneAfterDays * 86_400,
  };
  const judged = await assessSession(root, id, { ...settings, panes: index });
  if (judged.state === "unregistered") return; // no registry, no heartbeat: not a live session
  const base = { root, session: id, heartbeat_age: judged.heartbeatAge };
  const ts = new Date(now).toISOString();
  // The judgement asks for one thing at most: to prune a finished session, or to scavenge.
  const action = judged.actions[0];
  if (action?.kind === "prune") {
    if (await pruneSession(root, id, { ...settings, waitMs: d.config.hooks.lockWaitMs })) {
      await logRecovery(root, {
        ts,
        session: id,
        kind: "stale_session",
        action: "pruned",
        target: `sessions/${id}`,
        result: action.reason,
      });
      emit(d, { ...base, state: judged.state, action: "prune", reason: action.reason });
      return;
    }
  } else if (action?.kind === "scavenge") {
    const handoff = await scavenge(d, root, judged, action.reason, now);
    if (handoff === null) {
      emit(d, { ...base, state: "alive", action: "none", reason: "it showed life meanwhile" });
      return;
    }
    await logRecovery(root, {
      ts,
      session: id,
      kind: "stale_session",
      action: "scavenged",
      target: handoff,
      result: action.reason,
    });
    emit(d, {
      ...base,
      state: "dead",
      action: "scavenge",
      reason: `${action.reason}; wrote ${handoff}`,
      handoff,
    });
    return;
  }
  emit(d, { ...base, state: judged.state, action: "none", reason: judged.reason });
}

async function tickRoot(d: Daemon, root: string, index: PaneIndex): Promise<void> {
  const listing = listSessions(root);
  for (const { name, reason } of listing.skipped) {
    const key = `${root}\0${name}`;
    if (d.reported.has(key)) continue;
    d.reported.add(key);
    await logToOwnLog(d.ctx.env, {
      command: "daemon stale",
      message: `sessions/${name} is not a session (${reason}); skipped`,
      root,
    });
  }
  for (const name of listing.pruning) {
    await removeLeftover(root, name).catch(() => {});
  }
  for (const id of listing.ids) {
    if (d.ctx.signal.aborted) return;
    // One session's trouble (an unreadable file, a full disk) is logged; the others go on.
    try {
      await tickSession(d, root, id, index);
    } catch (error) {
      await logToOwnLog(d.ctx.env, {
        command: "daemon stale",
        message: `sessions/${id} could not be checked; skipped`,
        error,
        root,
        session: id,
      });
      emit(d, {
        root,
        session: id,
        state: "unknown",
        heartbeat_age: null,
        action: "none",
        reason: `could not be checked: ${describeError(error)}`,
      });
    }
  }
}

/** A stable name for a set of roots: one daemon per set. */
function rootSetId(roots: string[]): string {
  const key = [...roots].sort().join("\n");
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return `roots-${(h >>> 0).toString(16)}`;
}

export async function run(ctx: Context): Promise<number> {
  const args = parse(ctx.args);
  const roots = [
    ...new Set(await Promise.all(args.roots.map((root) => existingRoot(root, ctx.cwd)))),
  ];
  const config = await loadConfig(ctx.env, roots[0]);
  const ownRoot = await ownStateRoot(ctx.env);
  const base = joinPath(ownRoot, "daemon", rootSetId(roots));
  const acquired = await acquireInstanceLock(base, ctx.pid, { root: ownRoot });
  if ("heldBy" in acquired) {
    throw new CliError(
      `already running (pid ${acquired.heldBy ?? "unknown"})`,
      `one daemon per set of roots; its lock is ${base}.lock`,
    );
  }
  const d: Daemon = {
    ctx,
    args,
    config,
    staleAfter: args.staleAfterSeconds ?? config.stale.afterSeconds,
    reported: new Set(),
  };
  const intervalMs = (args.intervalSeconds ?? config.stale.intervalSeconds) * 1000;
  try {
    while (!ctx.signal.aborted) {
      const index: PaneIndex = new Map();
      for (const root of roots) await tickRoot(d, root, index);
      if (args.once) break;
      await sleep(intervalMs, ctx.signal);
    }
  } finally {
    await acquired.lock.release();
  }
  return EXIT.ok;
}
