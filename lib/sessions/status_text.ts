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

function table(rows: string[][], indent = "  "): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => indent + r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd())
    .join("\n");
}

const list = <T>(items: T[], show: (item: T) => string) =>
  items.length === 0 ? "none" : items.map(show).join(", ");

/** A project's sessions: the table of those not finished, and the count of the others. */
function sessionLines(p: ProjectView, indent: string): string[] {
  const listed = p.sessions.filter((x) => !p.finished.ids.has(x.id));
  const out = [`${indent}${listed.length === 0 ? "sessions: none" : "sessions:"}`];
  if (listed.length > 0) {
    // One line for the table: a project can hold thousands of sessions.
    const rows = listed.map((x) => [x.id, age(x.heartbeat_age), x.state, x.pane ?? "-"]);
    out.push(table([["id", "heartbeat", "state", "pane"], ...rows], `${indent}  `));
  }
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
    table([
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

/** The text of `lifeline status`. */
export function renderStatus(s: StatusView): string[] {
  const out = [`lifeline status for ${s.root}${s.found ? ` (${s.found})` : ""}`];
  out.push(`self-heal: ${s.kill_switch.state} (${s.kill_switch.path})`);
  out.push(running("watcher", s.watchers, "`lifeline watch tmux`"));
  const daemons = s.daemons.map((d) => ({
    pid: d.pid,
    name: d.name === "registered" ? "every registered project" : "the projects given with --root",
  }));
  out.push(running("daemon", daemons, "`lifeline daemon stale`"));
  out.push(...sessionLines(s, ""), ...paneLines(s.watched_panes), ...harnessLines(s, ""));
  if (s.other_projects.length > 0) out.push("other registered projects:");
  for (const other of s.other_projects) {
    out.push(`  ${other.root}`);
    if ("error" in other) out.push(`    cannot be read: ${other.error}`);
    else out.push(...sessionLines(other, "    "), ...harnessLines(other, "    "));
  }
  return out;
}
