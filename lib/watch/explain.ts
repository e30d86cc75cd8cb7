/**
 * `watch tmux --explain %PANE`: what a user runs when the watcher does nothing. It reads the
 * pane the way a scan does and says how: the screen's parts as normalised (conversation items,
 * input box, footer, dialog), the rule that matched, what the session's records say, and the
 * decision, without typing or writing anything.
 *
 * @module
 */

import { parseScreen, readScreen } from "../claude/screen.ts";
import { CliError } from "../core/cli.ts";
import { shortHash } from "../core/text.ts";
import { paneGate, type WatchDeps, type WatchSettings } from "./engine.ts";
import { type JoinedSession, joinSession, readRecords } from "./records.ts";
import type { RecordSignal } from "./records_policy.ts";
import { decidePane, newRecord, type PaneRecord } from "./watch_policy.ts";

/** What `--explain` shows, as data (`--json`) and as lines. */
export interface Explanation {
  pane: string;
  command: string;
  session: string | null;
  root: string | null;
  screen: {
    conversation: { kind: string; text: string }[];
    input: string | null;
    footer: string[];
    dialog: string[];
    width: number;
  };
  reading: ReturnType<typeof readScreen>;
  records: RecordSignal | null;
  decision: { state: string; signal: string | null; action: string; reason: string };
  text: string[];
}

/** Explains one pane. Throws when it does not exist. */
export async function explainPane(
  deps: Pick<WatchDeps, "tmux" | "now" | "sessions" | "processKey">,
  settings: WatchSettings,
  known: Record<string, PaneRecord>,
  paneId: string,
): Promise<Explanation> {
  const info = await deps.tmux.paneInfo(paneId);
  if (!info) {
    throw new CliError(
      `there is no pane ${paneId} on this tmux server`,
      "list the panes with: tmux list-panes -a -F '#{pane_id} #{session_name} #{pane_current_command}'",
    );
  }
  const server = await deps.tmux.identity();
  const registered = await deps.sessions().catch(() => []);
  const joined = server
    ? await joinSession(info, server, registered.filter((r) => r.record.tmux_pane === paneId))
    : null;
  const text = await deps.tmux.capture(paneId);
  const screen = parseScreen(text);
  const reading = readScreen(text);
  const records = joined?.verified
    ? await readRecords(joined, { localZone: settings.policy.localZone }).catch(() => null)
    : null;
  const identity = await deps.processKey(info.pid);
  const saved = known[paneId];
  const record = saved && saved.identity === identity
    ? saved
    : newRecord(paneId, info.session, identity);
  const decided = decidePane(record, { reading, screenHash: shortHash(text), records }, {
    ...settings.policy,
    now: deps.now(),
  });
  // What the scan decides, and then what the last look before a key would refuse.
  const agent = !info.dead && (settings.agentCommands.includes(info.command) ||
    (!!joined?.record.agent_command && joined.record.agent_command === info.command));
  const gate = paneGate(info, agent);
  const decidedAction = decided.actions[0]!;
  const action = gate && decidedAction.kind === "resume"
    ? { kind: "refuse" as const, reason: gate.reason }
    : !agent
    ? { kind: "none" as const, reason: `not watched: ${info.command || "?"} is not an agent` }
    : decidedAction;
  const items = screen.items.slice(-12).map((item) => ({ kind: item.kind, text: item.text }));
  const lines = [
    `pane ${paneId} (${info.session}, runs ${info.command || "?"}, ${info.width} columns)` +
    (info.synchronized ? "; synchronize-panes is on" : "") + (info.inMode ? "; in a mode" : ""),
    `session: ${
      joined ? `${joined.sessionId} in ${joined.root}` : "none registered for this pane"
    }`,
    ...(info.optedOut ? ["paused: @lifeline is off for this pane (lifeline watch resume)"] : []),
    "conversation (last items, as read):",
    ...items.map((item) => `  ${item.kind.padEnd(9)} ${item.text.slice(0, 160)}`),
    `input box: ${screen.input === null ? "none found" : JSON.stringify(screen.input)} (${
      screen.inputBox ?? "-"
    })`,
    `footer: ${screen.footer.length === 0 ? "-" : screen.footer.map((l) => l.trim()).join(" | ")}`,
    ...(screen.dialog.length > 0
      ? [`dialog: ${screen.dialog.map((l) => l.trim()).join(" | ")}`]
      : []),
    `screen: ${reading.state} (rule: ${reading.rule}); idle ${reading.idle}; ` +
    `layout ${reading.confident ? "recognised" : "not recognised"}` +
    (reading.resetText ? `; reset "${reading.resetText}"` : ""),
    `records: ${describeRecords(records, joined)}`,
    `decision: ${decided.shown.state} (signal ${
      decided.shown.signal ?? "-"
    }): ${action.kind} - ${action.reason}`,
  ];
  return {
    pane: paneId,
    command: info.command,
    session: joined?.sessionId ?? null,
    root: joined?.root ?? null,
    screen: {
      conversation: items,
      input: screen.input,
      footer: screen.footer,
      dialog: screen.dialog,
      width: screen.width,
    },
    reading,
    records,
    decision: {
      state: decided.shown.state,
      signal: decided.shown.signal,
      action: action.kind,
      reason: action.reason,
    },
    text: lines,
  };
}

function describeRecords(records: RecordSignal | null, joined: JoinedSession | null): string {
  if (records === null) {
    return joined
      ? "not read: the session's recorded agent process is not the one in this pane"
      : "none (no registered session)";
  }
  switch (records.kind) {
    case "limited":
      return `limited (${records.limitKind}) until ${
        records.resetAt === null ? "an unknown time" : new Date(records.resetAt).toISOString()
      }${records.native ? `, native auto-continue ${records.native}` : ""}: ${records.text}`;
    case "transient":
    case "permanent":
      return `${records.kind} (${records.error}) at ${
        new Date(records.at).toISOString()
      }: ${records.text}`;
    case "working":
      return `working again (newer conversation at ${new Date(records.at).toISOString()})`;
    case "none":
      return "nothing recorded";
  }
}
