/**
 * Pure: what `lifeline service install | uninstall` writes and runs, as data. The units (systemd
 * user services, launchd agents) for the watcher and the daemon, and, from what is on disk and
 * what the service manager says, the actions that bring it to the wanted state: files to write or
 * remove, and `systemctl --user` or `launchctl` command lines. The engine (`service.ts`) reads the
 * state and runs the actions; tests read both.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";

/** The service managers lifeline installs into. */
export type Manager = "systemd" | "launchd";

/** lifeline's two long-running commands. */
export type UnitKey = "watch" | "daemon";

/** Each unit: what it runs, and its description. */
export const UNITS: readonly { key: UnitKey; args: readonly string[]; description: string }[] = [
  {
    key: "watch",
    args: ["watch", "tmux"],
    description: "lifeline watch tmux: resume agents in tmux after their rate limit resets",
  },
  {
    key: "daemon",
    args: ["daemon", "stale"],
    description: "lifeline daemon stale: rescue sessions that died silently",
  },
];

/** Everything a unit's text depends on. */
export interface ServiceSettings {
  manager: Manager;
  /** How the units run lifeline: an argv with an absolute program. */
  binary: readonly string[];
  /** Where the unit files go. */
  unitDir: string;
  /** Where the units' stderr goes (lifeline's state directory's `logs/`). */
  logDir: string;
  home: string;
  /** Variables the units set: PATH, and lifeline's own locations when the user moved them. */
  environment: Readonly<Record<string, string>>;
  /** For launchd's `gui/<uid>` domain. */
  uid: number;
  /** The units' name prefix: `lifeline` (a test's own, so it never meets a real install). */
  prefix: string;
}

/** `lifeline-watch.service`, or launchd's label `dev.lifeline.watch`. */
export function unitName(settings: ServiceSettings, key: UnitKey): string {
  return settings.manager === "systemd"
    ? `${settings.prefix}-${key}.service`
    : `dev.${settings.prefix}.${key}`;
}

/** The unit's file. */
export function unitPath(settings: ServiceSettings, key: UnitKey): string {
  const name = unitName(settings, key);
  return joinPath(settings.unitDir, settings.manager === "systemd" ? name : `${name}.plist`);
}

/** Where a unit's stderr goes. */
export function unitLog(settings: ServiceSettings, key: UnitKey): string {
  return joinPath(settings.logDir, `${key}.service.log`);
}

/** One word of a systemd command line (systemd.service(5), "Command lines"). */
function systemdWord(word: string, { expand }: { expand: boolean }): string {
  const escaped = word.replaceAll("%", "%%");
  if (/^[\w@%+=:,./-]+$/.test(word)) return escaped;
  const quoted = escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"');
  return `"${expand ? quoted.replaceAll("$", "$$$$") : quoted}"`;
}

const HEADER = "Written by `lifeline service install`; `lifeline service uninstall` removes it.";

function systemdUnit(settings: ServiceSettings, key: UnitKey): string {
  const unit = UNITS.find((u) => u.key === key)!;
  const exec = [...settings.binary, ...unit.args].map((w) => systemdWord(w, { expand: true }));
  const environment = Object.entries(settings.environment)
    .map(([name, value]) => `Environment=${systemdWord(`${name}=${value}`, { expand: false })}`);
  return [
    `# ${HEADER}`,
    "[Unit]",
    `Description=${unit.description}`,
    "",
    "[Service]",
    `ExecStart=${exec.join(" ")}`,
    `WorkingDirectory=${systemdWord(settings.home, { expand: false })}`,
    ...environment,
    "Restart=on-failure",
    "RestartSec=10",
    `StandardError=append:${unitLog(settings, key).replaceAll("%", "%%")}`,
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

function xml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function launchdAgent(settings: ServiceSettings, key: UnitKey): string {
  const unit = UNITS.find((u) => u.key === key)!;
  const strings = (words: readonly string[], indent: string) =>
    words.map((w) => `${indent}<string>${xml(w)}</string>`);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    `<!-- ${HEADER} -->`,
    '<plist version="1.0">',
    "<dict>",
    `  <key>Label</key><string>${xml(unitName(settings, key))}</string>`,
    `  <!-- ${xml(unit.description)} -->`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    ...strings([...settings.binary, ...unit.args], "    "),
    "  </array>",
    `  <key>WorkingDirectory</key><string>${xml(settings.home)}</string>`,
    "  <key>EnvironmentVariables</key>",
    "  <dict>",
    ...Object.entries(settings.environment).map(([name, value]) =>
      `    <key>${xml(name)}</key><string>${xml(value)}</string>`
    ),
    "  </dict>",
    "  <key>RunAtLoad</key><true/>",
    // Restarted when it fails, like systemd's Restart=on-failure; not after a clean exit.
    "  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>",
    "  <key>ThrottleInterval</key><integer>10</integer>",
    // Its stdout repeats the JSONL log it writes itself (`lifeline logs`); its stderr is kept.
    "  <key>StandardOutPath</key><string>/dev/null</string>",
    `  <key>StandardErrorPath</key><string>${xml(unitLog(settings, key))}</string>`,
    "</dict>",
    "</plist>",
    "",
  ].join("\n");
}

/** A unit's file as lifeline writes it. */
export function unitText(settings: ServiceSettings, key: UnitKey): string {
  return settings.manager === "systemd" ? systemdUnit(settings, key) : launchdAgent(settings, key);
}

/** The command line a unit file runs, as written in it (to say what an update changes). */
export function unitCommand(manager: Manager, text: string): string | null {
  if (manager === "systemd") return /^ExecStart=(.*)$/m.exec(text)?.[1] ?? null;
  const array = /<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(text)?.[1];
  if (array === undefined) return null;
  return [...array.matchAll(/<string>(.*?)<\/string>/g)].map((m) => m[1]).join(" ");
}

/** A unit as found: its file's text (null: none) and what the manager says of it. */
export interface UnitState {
  key: UnitKey;
  text: string | null;
  /** systemd: `is-enabled`; launchd: loaded in the `gui/<uid>` domain. */
  enabled: boolean;
  /** systemd: `is-active`; launchd: loaded. */
  active: boolean;
}

/** One step of an install or uninstall. */
export type ServiceAction =
  | { kind: "mkdir"; path: string }
  | { kind: "write"; path: string; text: string }
  | { kind: "remove"; path: string }
  | { kind: "run"; argv: string[] };

/** What became of a unit. */
export type UnitChange =
  | { kind: "created" | "started" | "unchanged" | "removed" | "absent" }
  | { kind: "updated"; from: string | null; to: string | null };

/** What to do, and what it does to each unit. */
export interface ServiceDecision {
  actions: ServiceAction[];
  changes: { key: UnitKey; name: string; path: string; change: UnitChange }[];
}

const SYSTEMCTL = ["systemctl", "--user"];

/** Installs the units, or brings them up to date; nothing when they are (idempotent). */
export function decideInstall(state: readonly UnitState[], settings: ServiceSettings) {
  const decision: ServiceDecision = { actions: [], changes: [] };
  const changed = state.filter((u) => u.text !== unitText(settings, u.key));
  if (changed.length > 0) {
    decision.actions.push({ kind: "mkdir", path: settings.unitDir });
    decision.actions.push({ kind: "mkdir", path: settings.logDir });
  }
  for (const unit of state) {
    const name = unitName(settings, unit.key);
    const path = unitPath(settings, unit.key);
    const text = unitText(settings, unit.key);
    const change = unitChange(settings.manager, unit, text);
    decision.changes.push({ key: unit.key, name, path, change });
    if (change.kind !== "unchanged" && change.kind !== "started") {
      decision.actions.push({ kind: "write", path, text });
    }
  }
  const run = settings.manager === "systemd"
    ? systemdInstall(state, decision, changed.length > 0)
    : launchdInstall(state, decision, settings);
  decision.actions.push(...run.map((argv) => ({ kind: "run" as const, argv })));
  return decision;
}

function unitChange(manager: Manager, unit: UnitState, text: string): UnitChange {
  if (unit.text === null) return { kind: "created" };
  if (unit.text !== text) {
    return {
      kind: "updated",
      from: unitCommand(manager, unit.text),
      to: unitCommand(manager, text),
    };
  }
  return unit.enabled && unit.active ? { kind: "unchanged" } : { kind: "started" };
}

function systemdInstall(
  state: readonly UnitState[],
  decision: ServiceDecision,
  reload: boolean,
): string[][] {
  const runs: string[][] = reload ? [[...SYSTEMCTL, "daemon-reload"]] : [];
  state.forEach((unit, i) => {
    const { name, change } = decision.changes[i]!;
    if (!unit.enabled) runs.push([...SYSTEMCTL, "enable", name]);
    if (change.kind === "updated" && unit.active) runs.push([...SYSTEMCTL, "restart", name]);
    else if (!unit.active) runs.push([...SYSTEMCTL, "start", name]);
  });
  return runs;
}

function launchdInstall(
  state: readonly UnitState[],
  decision: ServiceDecision,
  settings: ServiceSettings,
): string[][] {
  const domain = `gui/${settings.uid}`;
  return state.flatMap((unit, i) => {
    const { name, path, change } = decision.changes[i]!;
    if (change.kind === "unchanged") return [];
    return [
      // A changed agent is unloaded first: launchd reads the file only when it loads it.
      ...(unit.active ? [["launchctl", "bootout", `${domain}/${name}`]] : []),
      ["launchctl", "enable", `${domain}/${name}`],
      ["launchctl", "bootstrap", domain, path],
    ];
  });
}

/**
 * Stops and removes the units whose files are where install writes them; nothing else: a unit of
 * the same name from elsewhere (another HOME, a hand-written one) is not lifeline's to stop.
 */
export function decideUninstall(state: readonly UnitState[], settings: ServiceSettings) {
  const decision: ServiceDecision = { actions: [], changes: [] };
  for (const unit of state) {
    const name = unitName(settings, unit.key);
    const path = unitPath(settings, unit.key);
    const present = unit.text !== null;
    const change = { kind: present ? "removed" as const : "absent" as const };
    decision.changes.push({ key: unit.key, name, path, change });
    if (!present) continue;
    if (settings.manager === "systemd") {
      decision.actions.push({ kind: "run", argv: [...SYSTEMCTL, "disable", "--now", name] });
    } else if (unit.active) {
      const target = `gui/${settings.uid}/${name}`;
      decision.actions.push({ kind: "run", argv: ["launchctl", "bootout", target] });
    }
    decision.actions.push({ kind: "remove", path });
  }
  if (settings.manager === "systemd" && decision.actions.length > 0) {
    decision.actions.push({ kind: "run", argv: [...SYSTEMCTL, "daemon-reload"] });
  }
  return decision;
}
