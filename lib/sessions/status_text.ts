/**
 * `lifeline status` as text: one screen for a person. The status itself is gathered by the
 * command from each capability; this module only words it, so its input is described by shape.
 *
 * @module
 */

import type { SessionRow } from "./session_status.ts";

/** One project, as the table shows it. */
export interface ProjectView {
  root: string;
  sessions: SessionRow[];
  breakers: { task: string; error_count: number | null }[];
  iterations: { current: number; max: number } | null;
  tools_over_threshold: { session: string; tool: string; failures: number }[];
  outbox: { session: string; advice: string[] }[];
  finished: { ids: Set<string>; pruneAfterDays: number };
}

/** A pane the watcher tracks, as the table shows it. */
export interface PaneView {
  server: string;
  pane: string;
  state: string;
  limited_until: string | null;
  attempts: number;
  resumed: boolean;
  gave_up: boolean;
  paused: boolean;
  refusal: string | null;
}

/** Everything the table shows. */
export interface StatusView extends ProjectView {
  /** How the root was found, when it is not the working directory or --root. */
  found: string | null;
  kill_switch: { state: string; path: string };
  watched_panes: PaneView[];
  watchers: { name: string; pid: number | null }[];
  daemons: { name: string; pid: number | null }[];
  other_projects: (ProjectView | { root: string; error: string })[];
}

function age(seconds: number | null): string {
  if (seconds === null) return "never";
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
}

/** One line a row, so that a line break in a cell is a character to replace, not a line. */
function table(rows: string[][], indent = "  "): string[] {
  const widths = rows[0]!.map((_, i) => rows.reduce((w, r) => Math.max(w, r[i]!.length), 0));
  return rows.map((r) => indent + r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}

const list = <T>(items: T[], show: (item: T) => string) =>
  items.length === 0 ? "none" : items.map(show).join(", ");

/** A project's sessions: the table of those not finished, and the count of the others. */
function sessionLines(p: ProjectView, indent: string): string[] {
  const listed = p.sessions.filter((x) => !p.finished.ids.has(x.id));
  const rows = listed.map((x) => [x.id, age(x.heartbeat_age), x.state, x.pane ?? "-"]);
  const out = listed.length === 0 ? [`${indent}sessions: none`] : [
    `${indent}sessions:`,
    ...table([["id", "heartbeat", "state", "pane"], ...rows], `${indent}  `),
  ];
  if (p.finished.ids.size > 0) {
    out.push(
      `${indent}finished sessions: ${p.finished.ids.size} (ended, or scavenged with the handoff ` +
        `delivered; deleted after ${p.finished.pruneAfterDays} days idle; --json lists them)`,
    );
  }
  return out;
}

/** A project's breakers, iteration budget, failing tools and pending advice. */
function harnessLines(p: ProjectView, indent: string): string[] {
  const breakers = list(p.breakers, (b) => `${b.task} (${b.error_count ?? "?"} failures)`);
  const out = [`${indent}open breakers: ${breakers}`];
  if (p.iterations) {
    const { current, max } = p.iterations;
    const spent = current >= max ? " (global breaker open: every task stops)" : "";
    out.push(
      `${indent}iteration budget: ${current}/${max}${spent}; ` +
        "reset with `lifeline fail reset --global`",
    );
  }
  const tools = list(p.tools_over_threshold, (t) => `${t.tool} x${t.failures} (${t.session})`);
  out.push(`${indent}tools at the fallback threshold: ${tools}`);
  out.push(`${indent}${p.outbox.length === 0 ? "pending advice: none" : "pending advice:"}`);
  for (const box of p.outbox) {
    for (const text of box.advice) out.push(`${indent}  ${box.session}: ${text}`);
  }
  return out;
}

function paneLines(panes: PaneView[]): string[] {
  if (panes.length === 0) return ["watched panes: none"];
  const state = (p: PaneView) =>
    p.paused ? "paused" : p.resumed ? "resumed" : p.gave_up ? "gave up" : p.state;
  return [
    "watched panes:",
    ...table([
      ["server", "pane", "state", "limited until", "attempts", "refusal"],
      ...panes.map((
        p,
      ) => [
        p.server,
        p.pane,
        state(p),
        p.limited_until ?? "-",
        String(p.attempts),
        p.refusal ?? "-",
      ]),
    ]),
  ];
}

function running(what: string, held: { name: string; pid: number | null }[], start: string) {
  if (held.length === 0) return `${what}: not running (start it: ${start})`;
  return `${what}: running (${held.map((h) => `pid ${h.pid ?? "?"}: ${h.name}`).join("; ")})`;
}

/**
 * Control characters (an escape sequence in a state file would reach the terminal: a title, a
 * cleared screen, a hidden line) and the bidirectional controls that reorder what is shown, each
 * as `?`: what is printed comes from files any process in the project may write.
 */
const UNPRINTABLE = /[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** The text of `lifeline status`, every line printable (see {@linkcode UNPRINTABLE}). */
export function renderStatus(s: StatusView): string[] {
  return statusLines(s).map((line) => line.replace(UNPRINTABLE, "?"));
}

function statusLines(s: StatusView): string[] {
  const out = [`lifeline status for ${s.root}${s.found ? ` (${s.found})` : ""}`];
  out.push(`self-heal: ${s.kill_switch.state} (${s.kill_switch.path})`);
  out.push(running("watcher", s.watchers, "`lifeline watch tmux`"));
  const daemons = s.daemons.map((d) => ({
    pid: d.pid,
    name: d.name === "registered" ? "every registered project" : "the projects given with --root",
  }));
  out.push(running("daemon", daemons, "`lifeline daemon stale`"));
  // Spread into arrays, never into a call's arguments: a project can hold thousands of sessions.
  const projects = s.other_projects.flatMap((other) => [
    `  ${other.root}`,
    ...("error" in other
      ? [`    cannot be read: ${other.error}`]
      : [...sessionLines(other, "    "), ...harnessLines(other, "    ")]),
  ]);
  return [
    ...out,
    ...sessionLines(s, ""),
    ...paneLines(s.watched_panes),
    ...harnessLines(s, ""),
    ...(projects.length > 0 ? ["other registered projects:", ...projects] : []),
  ];
}
