/**
 * `lifeline watch tmux`: rate-limit recovery for agents in tmux panes (spec/error-recovery.md
 * §5.1). It sees a limit banner, waits for the real reset, looks again, and resumes the pane; it
 * never types into a confirmation or destructive prompt, and when unsure it does nothing and says
 * why.
 *
 * @module
 */

import { CliError, type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { type Config, loadConfig } from "../lib/state/config.ts";
import { integerFlag, parseFlags } from "../lib/core/flags.ts";
import { absolutePath, joinPath } from "../lib/core/path.ts";
import { projectPaths } from "../lib/state/layout.ts";
import { ownStateRoot } from "../lib/state/own_log.ts";
import {
  afterAttempt,
  decide,
  type Decision,
  newRecord,
  type PaneRecord,
  refused,
  stagger,
  type WatchPolicy,
} from "../lib/watch/watch_policy.ts";
import { logRecovery } from "../lib/state/recovery_log.ts";
import { type Classification, classifyScreen, lastLinesRefusal } from "../lib/claude/screen.ts";
import { sessionRecordCodec } from "../lib/sessions/registry.ts";
import { sleep } from "../lib/core/sleep.ts";
import {
  acquireInstanceLock,
  describeError,
  jsonCodec,
  quarantine,
  readState,
  writeFileAtomic,
} from "../lib/state/store.ts";
import {
  capturePane,
  listPanes,
  type PaneInfo,
  paneInfo,
  sendEnter,
  sendLiteral,
  socketPath,
  type TmuxServer,
} from "../lib/host/tmux.ts";

export const help =
  `Usage: lifeline watch tmux [--socket NAME | --socket-path PATH] [--target SESSION|%PANE]
                           [--interval 60] [--once] [--dry-run] [--root DIR] [--json]

Watches agent panes for rate-limit banners and resumes them after the real reset. Each interval
it captures every pane whose foreground program is the agent (watch.agentCommands, "claude" by
default) or that the heartbeat registry lists, and classifies it:

  usage_limit          a limit banner with its reset: wait for reset + margin, then resume
  native_autocontinue  the client will continue by itself: left alone until well after its time
  transient_api_error  a final 429/529/5xx with the prompt idle: resume after a backoff; after
                       3 such resumes in a row (retry.foregroundMax), report it instead
  busy                 retrying, or "esc to interrupt": never typed into
  permanent            login, billing or organisation trouble: reported, never typed into
  dangerous_prompt     a permission, confirmation or trust prompt: never typed into
  limit_menu           "What do you want to do?": only its "Stop and wait" choice gets an Enter
  normal               nothing to do

Right before typing it captures the pane again and refuses if the last 5 lines or anything below
the conversation show a prompt or a destructive word, if the pane is gone, runs something else,
or is busy. It types the resume text with send-keys -l and presses Enter separately, once per
pane per reset, staggering panes that reset together, and checks afterwards that it worked.

Options:
  --socket NAME        tmux server socket name (tmux -L)
  --socket-path PATH   tmux server socket path (tmux -S)
  --target T           watch only this session, or this pane (%id)
  --interval SECONDS   seconds between scans (default: watch.intervalSeconds, 60)
  --once               scan once, act on what is due now, and exit
  --dry-run            decide everything, type nothing
  --root DIR           project whose config, registry and logs to use (default: .)
  --json               one JSON object per pane per scan and per action:
                       {"ts","pane","session","state","reset_at","action","reason"}
  -h, --help

Exits 1 when another watcher already runs on the same tmux server.`;

/** Parsed arguments. */
export interface WatchArgs {
  server: TmuxServer;
  target?: string;
  intervalSeconds?: number;
  once: boolean;
  dryRun: boolean;
  root?: string;
  json: boolean;
}

/** Parses `watch tmux` arguments. Throws UsageError. */
export function parse(args: readonly string[]): WatchArgs {
  const { values } = parseFlags(args, {
    socket: { type: "string" },
    "socket-path": { type: "string" },
    target: { type: "string" },
    interval: { type: "string" },
    once: { type: "boolean" },
    "dry-run": { type: "boolean" },
    root: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.socket !== undefined && values["socket-path"] !== undefined) {
    throw new UsageError("use --socket or --socket-path, not both");
  }
  const server: TmuxServer = values.socket !== undefined
    ? { socketName: values.socket }
    : values["socket-path"] !== undefined
    ? { socketPath: values["socket-path"] }
    : {};
  return {
    server,
    ...(values.target !== undefined ? { target: values.target } : {}),
    ...(values.interval !== undefined
      ? { intervalSeconds: integerFlag("interval", values.interval, 60, { min: 1, max: 86_400 }) }
      : {}),
    once: values.once === true,
    dryRun: values["dry-run"] === true,
    ...(values.root !== undefined ? { root: values.root } : {}),
    json: values.json === true,
  };
}

/** The watcher's persisted state: one record per pane. */
const stateCodec = jsonCodec((value) => {
  const panes = (value as { panes?: unknown }).panes;
  if (!panes || typeof panes !== "object") throw new Error("no panes");
  return { panes: panes as Record<string, PaneRecord> };
});

/** A name for the server's state and lock files. */
function serverId(server: TmuxServer, path: string | undefined): string {
  const raw = "socketName" in server
    ? `L-${server.socketName}`
    : "socketPath" in server
    ? `S-${server.socketPath}`
    : path
    ? `S-${path}`
    : "default";
  return raw.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 120);
}

/** A short stable hash of a screen, to notice when it changes. */
function screenHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16);
}

/** Panes the heartbeat registry lists, by id, with the agent command recorded for them. */
async function registryPanes(
  root: string,
  socket: string | undefined,
): Promise<Map<string, string>> {
  const panes = new Map<string, string>();
  const sessions = projectPaths(root).sessions;
  try {
    for await (const entry of Deno.readDir(sessions)) {
      const record = await readState(
        joinPath(sessions, entry.name, "session.json"),
        sessionRecordCodec,
        { root },
      );
      if (record.kind !== "ok" || !record.value.tmux_pane) continue;
      if (socket && record.value.tmux_socket && record.value.tmux_socket !== socket) continue;
      panes.set(record.value.tmux_pane, record.value.agent_command ?? "");
    }
  } catch {
    // No registry: agent panes are found by their command alone.
  }
  return panes;
}

interface Watcher {
  /** What was last printed per pane, so people get a line per change, not per scan. */
  printed: Map<string, string>;
  ctx: Context;
  args: WatchArgs;
  config: Config;
  root: string;
  policy: WatchPolicy;
  records: Map<string, PaneRecord>;
  registry: Map<string, string>;
}

function isAgentPane(w: Watcher, pane: PaneInfo): boolean {
  if (pane.dead) return false;
  if (w.config.watch.agentCommands.includes(pane.command)) return true;
  const recorded = w.registry.get(pane.id);
  return recorded !== undefined && recorded !== "" && recorded === pane.command;
}

function emit(
  w: Watcher,
  pane: { id: string; session: string },
  fields: { state: string; reset_at: number | null; action: string; reason: string },
): void {
  const ts = new Date(w.ctx.now()).toISOString();
  const resetAt = fields.reset_at === null ? null : new Date(fields.reset_at).toISOString();
  if (w.args.json) {
    w.ctx.out.json({ ts, pane: pane.id, session: pane.session, ...fields, reset_at: resetAt });
    return;
  }
  const text = `${pane.id} (${pane.session}) ${fields.state}: ${fields.action} - ${fields.reason}`;
  if (w.printed.get(pane.id) === text) return;
  w.printed.set(pane.id, text);
  w.ctx.out.line(`${ts} ${text}`);
}

async function log(w: Watcher, pane: PaneRecord, action: string, result: string, reason: string) {
  await logRecovery(w.root, {
    ts: new Date(w.ctx.now()).toISOString(),
    pane: pane.pane,
    session: pane.session,
    kind: "rate_limit",
    error_type: pane.state,
    action,
    target: pane.pane,
    result,
    reason,
  }).catch(() => {});
}

/** The last look before typing. Returns why not to type, or undefined to go ahead. */
async function refusalBeforeTyping(
  w: Watcher,
  record: PaneRecord,
  keys: "text" | "enter",
): Promise<{ reason: string; hash: string } | undefined> {
  const server = w.args.server;
  const info = await paneInfo(server, record.pane);
  if (!info || info.dead) return { reason: "the pane is gone", hash: "gone" };
  if (!isAgentPane(w, info)) {
    return { reason: `the pane now runs ${info.command}`, hash: info.command };
  }
  const text = await capturePane(server, record.pane);
  const hash = screenHash(text);
  const offending = lastLinesRefusal(text);
  if (offending) return { reason: `the last lines show ${JSON.stringify(offending.trim())}`, hash };
  const now = classifyScreen(text);
  if (now.state === "dangerous_prompt") return { reason: `${now.reason} on screen`, hash };
  if (now.state === "busy") return { reason: `the agent is busy (${now.reason})`, hash };
  const decision = decide(record, now, hash, w.ctx.now(), w.policy);
  if (decision.action !== "resume") {
    return { reason: `the screen changed: ${now.state} (${decision.reason})`, hash };
  }
  if (keys === "text" && !now.idle) return { reason: "the input box is not empty", hash };
  return undefined;
}

/** Types the resume and checks that it worked. */
async function resume(w: Watcher, record: PaneRecord, keys: "text" | "enter"): Promise<PaneRecord> {
  const pane = { id: record.pane, session: record.session };
  const refusal = await refusalBeforeTyping(w, record, keys);
  if (refusal) {
    emit(w, pane, {
      state: record.state,
      reset_at: record.reset_at,
      action: "refuse",
      reason: refusal.reason,
    });
    await log(w, record, "refuse", "not typed", refusal.reason);
    return refused(record, refusal.reason, refusal.hash);
  }
  const typed = keys === "text" ? `"${w.config.watch.resumeText}" then Enter` : "Enter";
  if (w.args.dryRun) {
    emit(w, pane, {
      state: record.state,
      reset_at: record.reset_at,
      action: "resume",
      reason: `dry run: would type ${typed}`,
    });
    return { ...record, resumed: true };
  }
  const server = w.args.server;
  if (keys === "text") {
    await sendLiteral(server, record.pane, w.config.watch.resumeText);
    await sleep(w.config.watch.keyDelayMs, w.ctx.signal);
  }
  await sendEnter(server, record.pane);
  emit(w, pane, {
    state: record.state,
    reset_at: record.reset_at,
    action: "resume",
    reason: `typed ${typed}`,
  });
  await sleep(w.config.watch.verifyDelaySeconds * 1000, w.ctx.signal);
  let after: Classification;
  try {
    after = classifyScreen(await capturePane(server, record.pane));
  } catch (error) {
    after = {
      state: "normal",
      reason: `pane gone after typing (${describeError(error)})`,
      idle: false,
    };
  }
  const ok = after.state === "busy" || after.state === "normal" ||
    (after.signature !== undefined && after.signature !== JSON.parse(record.episode ?? "[]")[1]);
  const what = `${typed}: ${ok ? "worked" : "did not work"} (then ${after.state}: ${after.reason})`;
  const next = afterAttempt(record, { ok, what, now: w.ctx.now() }, w.policy);
  await log(w, record, "resume", ok ? "resumed" : "still limited", what);
  emit(w, pane, {
    state: after.state,
    reset_at: record.reset_at,
    action: "resume",
    reason: ok ? `verified: ${what}` : `${what}; attempt ${next.attempts}/${w.policy.maxAttempts}` +
      (next.gave_up ? "" : `, next at ${new Date(next.resume_at!).toISOString()}`),
  });
  if (!ok && next.gave_up) {
    const reason = `gave up after ${next.attempts} attempts on ${record.state}: ${
      next.tried.join("; ")
    }`;
    emit(w, pane, { state: record.state, reset_at: record.reset_at, action: "report", reason });
    await log(w, next, "report", "gave up", reason);
  }
  return next;
}

/** One scan: classify every pane, decide, then resume what is due now. */
async function scan(w: Watcher): Promise<void> {
  const panes = await listPanes(w.args.server, w.args.target);
  const watched = w.args.target
    ? panes.filter((p) => !p.dead)
    : panes.filter((p) => isAgentPane(w, p));
  const decisions = new Map<string, Decision>();
  const seen = new Set<string>();
  for (const pane of watched) {
    seen.add(pane.id);
    let text: string;
    try {
      text = await capturePane(w.args.server, pane.id);
    } catch {
      continue; // closed between the listing and the capture
    }
    const current = w.records.get(pane.id) ?? newRecord(pane.id, pane.session);
    const decision = decide(current, classifyScreen(text), screenHash(text), w.ctx.now(), w.policy);
    decisions.set(pane.id, decision);
    w.records.set(pane.id, decision.record);
  }
  for (const id of [...w.records.keys()]) if (!seen.has(id)) w.records.delete(id);

  const staggered = stagger(
    [...w.records.values()],
    w.config.watch.staggerSeconds * 1000,
    Math.random,
  );
  for (const record of staggered) w.records.set(record.pane, record);

  for (const [id, decision] of decisions) {
    const record = w.records.get(id)!;
    let { action, reason } = decision;
    if (action === "resume" && w.ctx.now() < (record.resume_at ?? 0)) {
      action = "wait";
      reason = `${reason}; staggered after another pane, resume at ${
        new Date(record.resume_at!).toISOString()
      }`;
    }
    emit(w, { id, session: record.session }, {
      state: record.state,
      reset_at: record.reset_at,
      action,
      reason,
    });
    if (action === "report") await log(w, record, "report", "needs the user", reason);
  }
  const due = [...w.records.values()]
    .filter((r) => decisions.get(r.pane)?.action === "resume" && w.ctx.now() >= (r.resume_at ?? 0))
    .sort((a, b) => a.resume_at! - b.resume_at! || a.pane.localeCompare(b.pane));
  for (const record of due) {
    if (w.ctx.signal.aborted) break;
    w.records.set(record.pane, await resume(w, record, decisions.get(record.pane)!.keys ?? "text"));
  }
}

/** Milliseconds until the next scan: the interval, or sooner when a resume falls due. */
function nextWait(w: Watcher, intervalMs: number): number {
  const now = w.ctx.now();
  let wait = intervalMs;
  for (const r of w.records.values()) {
    // Only resumes still ahead: one that was due and did not happen (a refusal) waits for the
    // next regular scan, not a busy loop.
    if (r.resume_at !== null && r.resume_at > now && !r.resumed && !r.gave_up) {
      wait = Math.min(wait, r.resume_at - now + 50);
    }
  }
  return wait;
}

export async function run(ctx: Context): Promise<number> {
  const args = parse(ctx.args);
  const root = absolutePath(args.root ?? ".", ctx.cwd);
  const config = await loadConfig(ctx.env, root);
  const socket = await socketPath(args.server);
  const ownRoot = await ownStateRoot(ctx.env);
  const base = joinPath(
    ownRoot,
    "watch",
    serverId(args.server, socket) + (args.dryRun ? ".dry-run" : ""),
  );
  const acquired = await acquireInstanceLock(base, ctx.pid, { root: ownRoot });
  if ("heldBy" in acquired) {
    throw new CliError(
      `already running (pid ${acquired.heldBy ?? "unknown"})`,
      `one watcher per tmux server; its lock is ${base}.lock`,
    );
  }
  const statePath = `${base}.json`;
  const saved = await readState(statePath, stateCodec, { root: ownRoot });
  if (saved.kind === "corrupt") await quarantine(statePath, { root: ownRoot, now: ctx.now() });
  const w: Watcher = {
    ctx,
    args,
    config,
    root,
    policy: {
      resumeMarginSeconds: config.watch.resumeMarginSeconds,
      nativeMarginSeconds: config.watch.nativeMarginSeconds,
      transientBackoffSeconds: config.watch.transientBackoffSeconds,
      maxAttempts: config.watch.maxAttempts,
      foregroundRetries: config.retry.foregroundMax,
      localZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    },
    records: new Map(Object.entries(saved.kind === "ok" ? saved.value.panes : {})),
    printed: new Map(),
    registry: new Map(),
  };
  const intervalMs = (args.intervalSeconds ?? config.watch.intervalSeconds) * 1000;
  try {
    while (!ctx.signal.aborted) {
      w.registry = await registryPanes(root, socket);
      await scan(w);
      await writeFileAtomic(
        statePath,
        stateCodec.format({ panes: Object.fromEntries(w.records) }),
        { root: ownRoot },
      );
      if (args.once) break;
      await sleep(nextWait(w, intervalMs), ctx.signal);
    }
  } finally {
    await acquired.lock.release();
  }
  return EXIT.ok;
}
