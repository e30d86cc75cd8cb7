/**
 * The tmux watcher: scans a server's agent panes, decides with `watch_policy.ts`, and resumes
 * what is due, checking the pane again before every keystroke. Everything it touches is
 * injected (the tmux client, the clock, sleep, randomness, the session records, the event sink,
 * the recovery log), so tests drive it in-process against real tmux servers with a fake clock.
 *
 * The keystroke protocol, for a resume the policy decided:
 * 1. Look again: the pane is the same process, not synchronised with other panes, not in a mode,
 *    runs the agent; its screen still means "resume" and shows an empty input box with no
 *    prompt, dialog, busy row or armed native auto-continue; the last 5 lines pass spec §5.1.
 * 2. Type the resume text alone (`send-keys -l`).
 * 3. Look again: the input box must hold exactly the resume text, and nothing else may have
 *    become a prompt. Then Enter, separately. Otherwise take back what was typed when the input
 *    box still holds exactly it, or leave it, and report.
 * 4. Watch for the change (bounded by verifyDelaySeconds) and judge whether it worked.
 *
 * @module
 */

import {
  lastLinesRefusal,
  type PaneState,
  parseScreen,
  placeholderIsDim,
  readScreen,
  type ScreenReading,
} from "../claude/screen.ts";
import { shortHash } from "../core/text.ts";
import type { PaneInfo, ServerIdentity, TmuxServer } from "../host/tmux.ts";
import * as tmux from "../host/tmux.ts";
import type { SessionRecord } from "../sessions/registry.ts";
import { describeError } from "../state/store.ts";
import { type JoinedSession, joinSession, readRecords } from "./records.ts";
import type { RecordSignal } from "./records_policy.ts";
import {
  afterAttempt,
  decidePane,
  isoMinute,
  keystrokeRefusal,
  newRecord,
  type PaneDecision,
  type PaneRecord,
  refused,
  type Signal,
  stagger,
  type WatchAction,
  type WatchOptions,
} from "./watch_policy.ts";

/** The tmux calls the watcher makes, for one server. */
export interface TmuxClient {
  identity(): Promise<ServerIdentity | null>;
  /** Throws a `TmuxError` when the server does not answer. */
  listPanes(target?: string): Promise<PaneInfo[]>;
  paneInfo(id: string): Promise<PaneInfo | undefined>;
  capture(id: string): Promise<string>;
  /** The same capture with its escapes (colours, dim, reverse): how a placeholder is told. */
  captureStyled(id: string): Promise<string>;
  sendLiteral(id: string, text: string): Promise<void>;
  sendEnter(id: string): Promise<void>;
  sendBackspaces(id: string, count: number): Promise<void>;
}

/** The real tmux client for a server. */
export function tmuxClient(server: TmuxServer): TmuxClient {
  return {
    identity: () => tmux.serverIdentity(server),
    listPanes: (target) => tmux.listPanes(server, target, { strict: true }),
    paneInfo: (id) => tmux.paneInfo(server, id),
    capture: (id) => tmux.capturePane(server, id),
    captureStyled: (id) => tmux.capturePane(server, id, { escapes: true }),
    sendLiteral: (id, text) => tmux.sendLiteral(server, id, text),
    sendEnter: (id) => tmux.sendEnter(server, id),
    sendBackspaces: (id, count) => tmux.sendBackspaces(server, id, count),
  };
}

/** What the watcher did or decided about one pane (the `--json` line). */
export interface PaneEvent {
  ts: number;
  pane: string;
  session: string;
  state: PaneState;
  signal: Signal | null;
  reset_at: number | null;
  action: WatchAction["kind"];
  reason: string;
  /** The project of the session joined to the pane, when there is one. */
  root: string | null;
  /** For reports: what needs a human. */
  event?: string;
}

/** One line for a recovery log (spec/error-recovery.md "Output"). */
export type RecoveryEntry = {
  ts: string;
  pane: string;
  session: string;
  kind: "rate_limit";
  error_type: PaneState;
  action: string;
  target: string;
  result: string;
  reason: string;
};

/** Everything the watcher touches. */
export interface WatchDeps {
  tmux: TmuxClient;
  now(): number;
  /** Waits `ms`, whatever happens: the pauses inside a scan are short and must not be cut. */
  sleep(ms: number): Promise<void>;
  /**
   * The watcher was told to stop: no keystroke sequence starts, one under way ends without Enter
   * (its text taken back), and a resume's check ends at once, counted as an attempt.
   */
  stopping(): boolean;
  random(): number;
  emit(event: PaneEvent): void;
  /** The registered sessions that name a tmux pane, read at the start of each scan. */
  sessions(): Promise<{ root: string; record: SessionRecord }[]>;
  /** Appends to the joined session's project log (`root`), or lifeline's own (`null`). */
  log(entry: RecoveryEntry, root: string | null): Promise<void>;
  /** A key for a process's whole life (pid and start time). */
  processKey(pid: number): Promise<string>;
  /** Tells the user about something that needs them (see `host/notify.ts`). */
  notify(notice: WatchNotice): Promise<void>;
  /** Whether the user's Claude Code edits its prompt vim-style (`editorMode: "vim"`). */
  vimMode(): Promise<boolean>;
}

/** What the watcher tells the user about. */
export interface WatchNotice {
  event: "refused" | "gave_up" | "permanent" | "retries_exhausted";
  message: string;
  pane: string;
  /** The registered session joined to the pane, and its project, when there is one. */
  session: string | null;
  root: string | null;
}

/** The watcher's settings. */
export interface WatchSettings {
  agentCommands: readonly string[];
  resumeText: string;
  keyDelayMs: number;
  verifyDelayMs: number;
  staggerMs: number;
  dryRun: boolean;
  target?: string;
  policy: Omit<WatchOptions, "now">;
}

/** No tmux server answers on the socket. */
export class ServerDownError extends Error {
  override name = "ServerDownError";
}

/** How often a pane is looked at while waiting for a change. */
const POLL_MS = 150;

interface Observed {
  pane: PaneInfo;
  decision: PaneDecision;
  joined: JoinedSession | null;
  records: RecordSignal | null;
}

/** A look at a pane right before a keystroke: what is there, or why not to type. */
type Look =
  | { ok: true; text: string; reading: ScreenReading }
  | { ok: false; reason: string; hash: string };

/** The watcher of one tmux server. */
export class Watcher {
  readonly records: Map<string, PaneRecord>;
  #deps: WatchDeps;
  #settings: WatchSettings;
  /** What was last emitted per pane, to say each change once. */
  #said = new Map<string, string>();

  constructor(deps: WatchDeps, settings: WatchSettings, saved: Record<string, PaneRecord> = {}) {
    this.#deps = deps;
    this.#settings = settings;
    this.records = new Map(Object.entries(saved));
  }

  #options(): WatchOptions {
    return { ...this.#settings.policy, now: this.#deps.now() };
  }

  #emit(record: PaneRecord, fields: Omit<PaneEvent, "ts" | "pane" | "session">): void {
    const event = { ts: this.#deps.now(), pane: record.pane, session: record.session, ...fields };
    this.#deps.emit(event);
  }

  async #log(
    record: PaneRecord,
    root: string | null,
    action: string,
    result: string,
    reason: string,
  ) {
    await this.#deps.log({
      ts: new Date(this.#deps.now()).toISOString(),
      pane: record.pane,
      session: record.session,
      kind: "rate_limit",
      error_type: record.state,
      action,
      target: record.pane,
      result,
      reason,
    }, root).catch(() => {});
  }

  #isAgent(pane: PaneInfo, joined: JoinedSession | null): boolean {
    if (pane.dead) return false;
    if (this.#settings.agentCommands.includes(pane.command)) return true;
    const recorded = joined?.record.agent_command;
    return !!recorded && recorded === pane.command;
  }

  /** One scan: every agent pane is looked at and decided; what is due is resumed. */
  async scan(): Promise<void> {
    const server = await this.#deps.tmux.identity();
    if (!server) throw new ServerDownError("no tmux server answers on the socket");
    const panes = await this.#deps.tmux.listPanes(this.#settings.target).catch((error) => {
      // The server went away between the two calls: waited for like any server that stops.
      if (error instanceof tmux.TmuxError && error.serverDown) {
        throw new ServerDownError("the tmux server stopped answering");
      }
      // A target that names no session or pane: nothing to watch (the command says so).
      if (error instanceof tmux.TmuxError && this.#settings.target) return [];
      throw error;
    });
    const registered = await this.#deps.sessions().catch(() => []);
    const observed: Observed[] = [];
    const seen = new Set<string>();
    for (const pane of panes) {
      const byPane = registered.filter((r) => r.record.tmux_pane === pane.id);
      const joined = byPane.length > 0 ? await joinSession(pane, server, byPane) : null;
      if (!this.#isAgent(pane, joined)) continue;
      seen.add(pane.id);
      try {
        const one = await this.#observe(pane, joined);
        if (one) observed.push(one);
      } catch (error) {
        // One pane's trouble (it closed, it is in a mode tmux will not capture) is that pane's.
        const record = this.records.get(pane.id) ?? newRecord(pane.id, pane.session);
        const reason = `could not read the pane: ${describeError(error)}`;
        this.#note(record, reason, joined);
        await this.#log(record, joined?.root ?? null, "look", "failed", reason);
      }
    }
    for (const id of [...this.records.keys()]) if (!seen.has(id)) this.records.delete(id);

    for (
      const record of stagger([...this.records.values()], {
        staggerMs: this.#settings.staggerMs,
        random: this.#deps.random,
        now: this.#deps.now(),
      })
    ) this.records.set(record.pane, record);

    const now = this.#deps.now();
    const due: Observed[] = [];
    for (const one of observed) {
      const record = this.records.get(one.pane.id)!;
      let action = one.decision.actions[0]!;
      if (action.kind === "resume" && now < (record.resume_at ?? 0)) {
        action = {
          kind: "wait",
          until: record.resume_at,
          reason: `${action.reason}; staggered after another pane, resume at ${
            isoMinute(record.resume_at)
          }`,
        };
      }
      if (action.kind === "resume") due.push(one);
      else await this.#report(record, one, action);
    }
    due.sort((a, b) =>
      this.records.get(a.pane.id)!.resume_at! - this.records.get(b.pane.id)!.resume_at! ||
      a.pane.id.localeCompare(b.pane.id)
    );
    // Each pane is typed into and verified on its own: one slow pane holds up no other.
    await Promise.all(due.map(async (one) => {
      const action = one.decision.actions[0] as Extract<WatchAction, { kind: "resume" }>;
      const done = await this.#resume(this.records.get(one.pane.id)!, action, one);
      this.records.set(one.pane.id, done);
    }));
  }

  /** Says something about a pane that decides nothing (no action, no signal). */
  #note(record: PaneRecord, reason: string, joined: JoinedSession | null): void {
    this.#emit(record, {
      state: record.state,
      signal: null,
      reset_at: record.reset_at,
      action: "none",
      reason,
      root: joined?.root ?? null,
    });
  }

  async #observe(pane: PaneInfo, joined: JoinedSession | null): Promise<Observed | undefined> {
    const identity = await this.#deps.processKey(pane.pid);
    let record = this.records.get(pane.id);
    if (!record || record.identity !== identity) {
      // A pane id the server gave to a new process: what was known about the old one is not its.
      record = newRecord(pane.id, pane.session, identity);
    }
    record = { ...record, session: pane.session, paused: pane.optedOut };
    if (pane.optedOut) {
      // The user's hands-off: nothing is read or decided, and nothing will be typed.
      this.records.set(pane.id, record);
      const reason = `paused: @lifeline is off for this pane (lifeline watch resume ${pane.id})`;
      if (this.#said.get(pane.id) !== reason) {
        this.#said.set(pane.id, reason);
        this.#note(record, reason, joined);
      }
      return undefined;
    }
    const now = this.#deps.now();
    if (record.next_look_at !== null && now < record.next_look_at) {
      this.records.set(pane.id, record);
      return undefined; // an unreadable reset: looked at again only at its time
    }
    const text = await this.#deps.tmux.capture(pane.id);
    // A session joined by pane id alone (no agent process that matches) may be another's.
    const records = joined?.verified
      ? await readRecords(joined, { localZone: this.#settings.policy.localZone }).catch(() => null)
      : null;
    const decision = decidePane(
      record,
      { reading: readScreen(text), screenHash: shortHash(text), records },
      this.#options(),
    );
    this.records.set(pane.id, decision.state);
    return { pane, decision, joined, records };
  }

  async #report(record: PaneRecord, one: Observed, action: WatchAction): Promise<void> {
    const root = one.joined?.root ?? null;
    const fields = {
      state: one.decision.shown.state,
      signal: one.decision.shown.signal,
      reset_at: record.reset_at,
      action: action.kind,
      reason: action.reason,
      root,
      ...(action.kind === "report" ? { event: action.event } : {}),
    };
    // Say each change once; a report or refusal is news every time it is made.
    const key = `${fields.state} ${fields.action} ${fields.reason}`;
    if (
      action.kind === "report" || action.kind === "refuse" || this.#said.get(record.pane) !== key
    ) {
      this.#said.set(record.pane, key);
      this.#emit(record, fields);
    }
    if (action.kind === "report") {
      await this.#log(record, root, "report", "needs the user", action.reason);
      this.records.set(record.pane, await this.#tell(record, one, action.event, action.reason));
    }
    if (action.kind === "refuse") {
      await this.#log(record, root, "refuse", "not typed", action.reason);
      this.records.set(
        record.pane,
        await this.#tell(
          record,
          one,
          "refused",
          `not typing into ${record.pane}: ${action.reason}`,
        ),
      );
    }
  }

  /** Tells the user, once per pane per episode (the record keeps what it told). */
  async #tell(
    record: PaneRecord,
    one: Observed,
    event: WatchNotice["event"],
    message: string,
  ): Promise<PaneRecord> {
    const episode = record.episode ?? record.state;
    if (record.notified === episode) return record;
    await this.#deps.notify({
      event,
      message: `${record.pane} (${record.session}): ${message}`,
      pane: record.pane,
      session: one.joined?.sessionId ?? null,
      root: one.joined?.root ?? null,
    }).catch(() => {});
    return { ...record, notified: episode };
  }

  /**
   * Why a key must not go to the pane now, whatever its screen shows: it is gone or another
   * process, runs something else, would pass the key on to other panes, or would take it itself.
   */
  async #paneRefusal(
    record: PaneRecord,
    joined: JoinedSession | null,
  ): Promise<{ reason: string; hash: string } | null> {
    const info = await this.#deps.tmux.paneInfo(record.pane);
    if (!info || info.dead) return { reason: "the pane is gone", hash: "gone" };
    if (await this.#deps.processKey(info.pid) !== record.identity) {
      return { reason: `${record.pane} is now another process`, hash: "other" };
    }
    return paneGate(info, this.#isAgent(info, joined));
  }

  /** The last look before a keystroke. `expect` is what the input box must hold. */
  async #look(
    record: PaneRecord,
    one: Observed,
    expect: string,
    keys: "text" | "enter",
  ): Promise<Look> {
    const pane = await this.#paneRefusal(record, one.joined);
    if (pane) return { ok: false, ...pane };
    const text = await this.#deps.tmux.capture(record.pane);
    const hash = shortHash(text);
    const reading = readScreen(text);
    const offending = lastLinesRefusal(text, {
      safeLimitMenu: keys === "enter" && reading.state === "limit_menu" && reading.keys === "enter",
    });
    if (offending) {
      return { ok: false, reason: `the last lines show ${JSON.stringify(offending.trim())}`, hash };
    }
    const vim = await this.#deps.vimMode().catch(() => false);
    const refusal = keystrokeRefusal(reading, { expect, keys, vim });
    if (refusal) return { ok: false, reason: refusal, hash };
    if (expect === "" && reading.placeholder) {
      // The words are a placeholder's; only the drawing (dim) tells it from a draft that says
      // the same.
      const styled = await this.#deps.tmux.captureStyled(record.pane);
      if (!placeholderIsDim(styled)) {
        return {
          ok: false,
          reason:
            `the input box holds ${JSON.stringify(reading.placeholder)} in full colour: a draft ` +
            "that reads like a placeholder, not one",
          hash,
        };
      }
    }
    return { ok: true, text, reading };
  }

  async #refuse(
    record: PaneRecord,
    one: Observed,
    reason: string,
    hash: string,
  ): Promise<PaneRecord> {
    const next = refused(record, reason, hash);
    this.#emit(next, {
      state: one.decision.shown.state,
      signal: one.decision.shown.signal,
      reset_at: next.reset_at,
      action: "refuse",
      reason,
      root: one.joined?.root ?? null,
    });
    await this.#log(next, one.joined?.root ?? null, "refuse", "not typed", reason);
    return await this.#tell(next, one, "refused", `not typing into ${record.pane}: ${reason}`);
  }

  /** Types the resume, checking before each keystroke, and verifies that it worked. */
  async #resume(
    record: PaneRecord,
    action: Extract<WatchAction, { kind: "resume" }>,
    one: Observed,
  ): Promise<PaneRecord> {
    const root = one.joined?.root ?? null;
    const text = this.#settings.resumeText;
    const typed = action.keys === "text" ? `"${text}" then Enter` : "Enter";
    const shown = { state: one.decision.shown.state, signal: one.decision.shown.signal, root };
    if (this.#deps.stopping()) return record;
    try {
      const before = await this.#look(record, one, "", action.keys);
      if (!before.ok) return await this.#refuse(record, one, before.reason, before.hash);
      // The screen must still mean "resume" now, not just at the scan.
      const again = decidePane(record, {
        reading: before.reading,
        screenHash: shortHash(before.text),
        records: one.records,
      }, this.#options());
      if (again.actions[0]?.kind !== "resume") {
        return await this.#refuse(
          record,
          one,
          `the screen changed: ${again.state.reason}`,
          shortHash(before.text),
        );
      }
      if (this.#settings.dryRun) {
        this.#emit(record, {
          ...shown,
          reset_at: record.reset_at,
          action: "resume",
          reason: `dry run: would type ${typed} (${action.reason})`,
        });
        return { ...record, resumed: true };
      }
      if (action.keys === "text") {
        await this.#deps.tmux.sendLiteral(record.pane, text);
        const echoed = await this.#waitFor(
          record.pane,
          (r) => r.input === text,
          Math.max(this.#settings.keyDelayMs, 2000),
        );
        if (!(await this.#pause(this.#settings.keyDelayMs))) {
          return await this.#takeBack(record, one, "the watcher was told to stop before Enter");
        }
        const typedLook = await this.#look(record, one, text, "text");
        if (!typedLook.ok || !echoed) {
          return await this.#takeBack(
            record,
            one,
            typedLook.ok ? "the typed text did not show in the input box" : typedLook.reason,
          );
        }
      }
      // Told to stop while the last look ran: no Enter after a stop request, however late.
      if (action.keys === "text" && this.#deps.stopping()) {
        return await this.#takeBack(record, one, "the watcher was told to stop before Enter");
      }
      await this.#deps.tmux.sendEnter(record.pane);
      this.#emit(record, {
        ...shown,
        reset_at: record.reset_at,
        action: "resume",
        reason: `typed ${typed} (${action.reason})`,
      });
      return await this.#verify(record, one, before, typed);
    } catch (error) {
      const what = `${typed}: failed (${describeError(error)})`;
      const next = afterAttempt(record, { ok: false, what }, {
        now: this.#deps.now(),
        maxAttempts: this.#settings.policy.maxAttempts,
      });
      this.#emit(next, { ...shown, reset_at: next.reset_at, action: "resume", reason: what });
      await this.#log(next, root, "resume", "failed", what);
      return next;
    }
  }

  /**
   * After typing the resume text, something is wrong: take the text back when the input box
   * still holds exactly it and nothing on screen is a prompt, or leave it; report either way.
   */
  async #takeBack(record: PaneRecord, one: Observed, why: string): Promise<PaneRecord> {
    const text = this.#settings.resumeText;
    // Backspaces are keys like any other: the pane must still take them alone (no synchronised
    // panes, no mode, the same agent), or they are not sent.
    const pane = await this.#paneRefusal(record, one.joined).catch(() => ({
      reason: "",
      hash: "",
    }));
    const now = readScreen(await this.#deps.tmux.capture(record.pane).catch(() => ""));
    // Backspace edits the input box, busy agent or not; a dialog would take it as an answer.
    const safeToClear = pane === null && now.input === text && now.confident &&
      !["dangerous_prompt", "limit_menu"].includes(now.state);
    let outcome: string;
    if (pane) {
      outcome = `left the typed "${text}" as it is (${
        pane.reason || "the pane cannot be checked"
      })`;
    } else if (safeToClear) {
      await this.#deps.tmux.sendBackspaces(record.pane, [...text].length);
      const cleared = await this.#waitFor(record.pane, (r) => r.input === "", 2000);
      outcome = cleared
        ? "took the typed text back"
        : "tried to take the typed text back; check the pane";
    } else if (now.input !== null && !now.input.includes(text)) {
      // Not in the box: the keys went somewhere else (a mode that took them as commands, a
      // prompt), and no Backspace can take them back.
      outcome = `the typed text is not in the input box (it holds ${
        JSON.stringify(now.input)
      }); check the pane`;
    } else {
      outcome = `left the typed "${text}" as it is (${
        now.input === null ? "no input box" : `the input box holds ${JSON.stringify(now.input)}`
      })`;
    }
    const reason = `typed "${text}", then ${why}: no Enter; ${outcome}`;
    const attempted = afterAttempt(refused(record, reason, "typed"), { ok: false, what: reason }, {
      now: this.#deps.now(),
      maxAttempts: this.#settings.policy.maxAttempts,
    });
    // Text left in the box: later refusals say whose it may be (see the policy).
    const next = outcome.startsWith("left the typed")
      ? { ...attempted, left_text: text }
      : { ...attempted, left_text: null };
    this.#emit(next, {
      state: now.state,
      signal: one.decision.shown.signal,
      reset_at: next.reset_at,
      action: "report",
      reason,
      root: one.joined?.root ?? null,
      event: "refused",
    });
    await this.#log(next, one.joined?.root ?? null, "resume", "stopped before Enter", reason);
    return await this.#tell(next, one, "refused", reason);
  }

  /** Waits `ms` in short steps; false as soon as the watcher is told to stop. */
  async #pause(ms: number): Promise<boolean> {
    const until = this.#deps.now() + ms;
    while (!this.#deps.stopping()) {
      const left = until - this.#deps.now();
      if (left <= 0) return true;
      await this.#deps.sleep(Math.min(left, POLL_MS));
    }
    return false;
  }

  /** Polls the pane until `done` holds for its reading, or `timeoutMs` passes. */
  async #waitFor(
    pane: string,
    done: (r: ScreenReading) => boolean,
    timeoutMs: number,
  ): Promise<boolean> {
    const deadline = this.#deps.now() + timeoutMs;
    for (;;) {
      const text = await this.#deps.tmux.capture(pane).catch(() => null);
      if (text !== null && done(readScreen(text))) return true;
      if (this.#deps.now() >= deadline) return false;
      await this.#deps.sleep(POLL_MS);
    }
  }

  /**
   * Watches the pane for the resume to take effect, at most verifyDelaySeconds. It worked when
   * the conversation moved on and the pane is no longer where it was: busy, idle, or showing
   * something else (a limit hit again at once is the same banner again: it did not work).
   */
  async #verify(
    record: PaneRecord,
    one: Observed,
    before: { text: string; reading: ScreenReading },
    typed: string,
  ): Promise<PaneRecord> {
    const root = one.joined?.root ?? null;
    const conversationBefore = conversationHash(before.text);
    // Only an agent at work (or done and idle) is a resume that worked: the same limit or error
    // back, with other companion rows, is not; nor is a prompt that came up. Enter on the limit
    // menu's "Stop and wait" works when the menu closes and leaves its banner.
    const worked = (text: string, reading: ScreenReading) =>
      conversationHash(text) !== conversationBefore &&
      (reading.state === "busy" || reading.state === "normal" ||
        before.reading.state === "limit_menu" && reading.state === "usage_limit");
    let after: ScreenReading | null = null;
    let ok = false;
    let stopped = false;
    const deadline = this.#deps.now() + this.#settings.verifyDelayMs;
    for (;;) {
      const text = await this.#deps.tmux.capture(record.pane).catch(() => null);
      if (text === null) break;
      after = readScreen(text);
      ok = worked(text, after);
      if (ok || this.#deps.now() >= deadline) break;
      // Told to stop: the attempt is counted as one that did not work, and saved, so the next
      // watcher neither types again at once nor starts counting afresh.
      if ((stopped = this.#deps.stopping())) break;
      await this.#deps.sleep(POLL_MS);
    }
    const then = after === null
      ? "the pane is gone"
      : stopped
      ? `the watcher was told to stop before it could tell; now ${after.state}`
      : `now ${after.state}: ${after.rule}`;
    const what = `${typed}: ${ok ? "worked" : "did not work"} (${then})`;
    // Enter went: whatever stopped an earlier try is not why this one ended.
    const next = afterAttempt({ ...record, refusal: null }, { ok, what }, {
      now: this.#deps.now(),
      maxAttempts: this.#settings.policy.maxAttempts,
    });
    await this.#log(next, root, "resume", ok ? "resumed" : "still limited", what);
    const reason = ok
      ? `verified: ${what}`
      : `${what}; attempt ${next.attempts}/${this.#settings.policy.maxAttempts}` +
        (next.gave_up ? "" : `, next at ${isoMinute(next.resume_at)}`);
    const signal = one.decision.shown.signal;
    this.#emit(next, {
      state: after?.state ?? "normal",
      signal,
      reset_at: record.reset_at,
      action: "resume",
      reason,
      root,
    });
    if (!ok && next.gave_up) {
      const gaveUp = `gave up after ${next.attempts} attempts on ${record.state}: ${
        next.tried.join("; ")
      }`;
      this.#emit(next, {
        state: record.state,
        signal,
        reset_at: record.reset_at,
        action: "report",
        reason: gaveUp,
        root,
        event: "gave_up",
      });
      await this.#log(next, root, "report", "gave up", gaveUp);
      return await this.#tell(next, one, "gave_up", gaveUp);
    }
    return next;
  }

  /** Milliseconds until the next scan: the interval, or sooner when a resume or look falls due. */
  nextWaitMs(intervalMs: number): number {
    const now = this.#deps.now();
    let wait = intervalMs;
    for (const r of this.records.values()) {
      for (const at of [r.resumed || r.gave_up ? null : r.resume_at, r.next_look_at]) {
        // Only times still ahead: one that was due and did not happen (a refusal) waits for the
        // next regular scan, not a busy loop.
        if (at !== null && at > now) wait = Math.min(wait, at - now + 50);
      }
    }
    return wait;
  }
}

/**
 * Why no key may go to a pane, from what tmux says of it: it runs something other than the agent,
 * would pass keys to other panes, would take them itself, or the user paused it. Null: none.
 */
export function paneGate(info: PaneInfo, agent: boolean): { reason: string; hash: string } | null {
  if (!agent) return { reason: `the pane now runs ${info.command}`, hash: info.command };
  if (info.synchronized) {
    return {
      reason: "the window has synchronize-panes on: the keys would reach its other panes too",
      hash: "sync",
    };
  }
  if (info.inMode) return { reason: "the pane is in a mode (copy mode?)", hash: "mode" };
  if (info.inputOff) return { reason: "input to the pane is disabled", hash: "input-off" };
  if (info.optedOut) return { reason: "paused: @lifeline is off", hash: "paused" };
  return null;
}

/** Identifies the conversation part of a screen (above the input box). */
function conversationHash(text: string): string {
  return shortHash(parseScreen(text).conversation.join("\n"));
}
