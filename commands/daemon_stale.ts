/**
 * `lifeline daemon stale`: finds sessions that died silently and rescues their unsaved findings
 * from the transcript into `sessions/<id>/handoffs/scavenged.md`, which `hook crash` offers to the
 * next session (spec/error-recovery.md §5.3).
 *
 * @module
 */

import { CliError, type Context, existingRoot, EXIT } from "../lib/core/cli.ts";
import { loadConfig } from "../lib/state/config.ts";
import { integerFlag, parseFlags } from "../lib/core/flags.ts";
import { joinPath } from "../lib/core/path.ts";
import { projectPaths, sessionPaths, validateName } from "../lib/state/layout.ts";
import { judgeSession, type Liveness } from "../lib/sessions/stale_policy.ts";
import { hostEvidence, type PaneIndex } from "../lib/sessions/liveness.ts";
import { logRecovery } from "../lib/state/recovery_log.ts";
import { renderHandoff, scavengeFile, type TranscriptSummary } from "../lib/sessions/scavenger.ts";
import { readHeartbeat, type SessionRecord, sessionRecordCodec } from "../lib/sessions/registry.ts";
import { sleep } from "../lib/core/sleep.ts";
import { ownStateRoot } from "../lib/state/own_log.ts";
import {
  acquireInstanceLock,
  describeError,
  readState,
  readTextHead,
  RefusedPathError,
  removeFile,
  writeFileAtomic,
} from "../lib/state/store.ts";

export const help =
  `Usage: lifeline daemon stale [--root DIR]... [--interval 60] [--stale-after 300]
                            [--once] [--json]

Finds sessions that died silently and rescues what they were doing. Each tick it checks every
sessions/<id>/ under each root. A session is dead when its heartbeat is older than --stale-after
seconds and it has lost its host: its tmux pane (from session.json) is gone, or its agent pid is
dead or now belongs to another program. A fresh heartbeat, or a live pane and pid, is alive.

For a dead session it streams the transcript and writes sessions/<id>/handoffs/scavenged.md:
facts (cwd, branch, model, times), the last prompts and replies, open todos, files edited,
unresolved tool errors, the last API error and compactions, with secrets redacted. Then it sets
sessions/<id>/status to "scavenged". \`lifeline hook crash\` offers the handoff to the next
session. A scavenged session whose heartbeat comes back is marked alive again.

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

async function readStatus(root: string, path: string): Promise<string> {
  try {
    return (await readTextHead(path, { root, maxBytes: 64 })).text.trim();
  } catch (error) {
    if (error instanceof RefusedPathError) throw error;
    return "";
  }
}

interface Daemon {
  ctx: Context;
  args: DaemonArgs;
  staleAfter: number;
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

/** Writes the handoff and the status; returns the handoff's path relative to the root. */
async function scavenge(
  root: string,
  id: string,
  record: SessionRecord | undefined,
  liveness: Liveness,
  now: number,
): Promise<string> {
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
    cause: liveness.reason,
    rescuedAt: new Date(now).toISOString(),
    ...(problem ? { transcriptProblem: problem } : {}),
  }, summary);
  await writeFileAtomic(paths.scavenged, markdown, { root });
  // A new handoff is unread again, even if an earlier one was offered.
  await removeFile(`${paths.scavenged}.offered`, { root }).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  await writeFileAtomic(paths.status, "scavenged\n", { root });
  return `sessions/${id}/handoffs/scavenged.md`;
}

async function tickRoot(d: Daemon, root: string, index: PaneIndex): Promise<void> {
  const sessionsDir = projectPaths(root).sessions;
  const ids: string[] = [];
  try {
    for await (const entry of Deno.readDir(sessionsDir)) {
      if (entry.isDirectory) ids.push(entry.name);
    }
  } catch {
    return; // no sessions yet
  }
  for (const id of ids.sort()) {
    if (d.ctx.signal.aborted) return;
    try {
      validateName("session id", id);
    } catch {
      continue; // not a directory lifeline made
    }
    const paths = sessionPaths(root, id);
    const registry = await readState(paths.session, sessionRecordCodec, { root });
    const record = registry.kind === "ok" ? registry.value : undefined;
    const beat = await readHeartbeat(root, id);
    if (!record && beat === undefined) continue; // no registry, no heartbeat: not a live session
    const now = d.ctx.now();
    const age = beat === undefined ? null : Math.max(0, Math.floor(now / 1000) - beat);
    const status = await readStatus(root, paths.status);
    const fresh = age !== null && age <= d.staleAfter;
    const base = { root, session: id, heartbeat_age: age };
    if (status === "scavenged") {
      if (fresh) {
        await writeFileAtomic(paths.status, "alive\n", { root });
        await logRecovery(root, {
          ts: new Date(now).toISOString(),
          session: id,
          kind: "stale_session",
          action: "revived",
          target: `sessions/${id}`,
          result: "heartbeat is fresh again; marked alive",
        });
        emit(d, {
          ...base,
          state: "alive",
          action: "revive",
          reason: "its heartbeat is fresh again",
        });
      } else {
        emit(d, { ...base, state: "scavenged", action: "none", reason: "already scavenged" });
      }
      continue;
    }
    const liveness = fresh
      ? judgeSession(age, { pane: "unknown", process: "unknown" }, d.staleAfter)
      : judgeSession(age, await hostEvidence(record, index), d.staleAfter);
    if (liveness.state !== "dead") {
      emit(d, { ...base, state: liveness.state, action: "none", reason: liveness.reason });
      continue;
    }
    const handoff = await scavenge(root, id, record, liveness, now);
    await logRecovery(root, {
      ts: new Date(now).toISOString(),
      session: id,
      kind: "stale_session",
      action: "scavenged",
      target: handoff,
      result: liveness.reason,
    });
    emit(d, {
      ...base,
      state: "dead",
      action: "scavenge",
      reason: `${liveness.reason}; wrote ${handoff}`,
      handoff,
    });
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
  const d: Daemon = { ctx, args, staleAfter: args.staleAfterSeconds ?? config.stale.afterSeconds };
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
