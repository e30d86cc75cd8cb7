/**
 * Running the watcher and the daemon as services: which service manager this machine has
 * (systemd's user instance, launchd, or neither: containers, WSL without systemd), what its units
 * look like now, and carrying out what `service_policy.ts` decides. Every `systemctl` and
 * `launchctl` call goes through a {@linkcode Runner}, so tests can run fakes or the real thing.
 *
 * @module
 */

import { CliError, UsageError } from "../core/cli.ts";
import { dirName, joinPath } from "../core/path.ts";
import { shellWord } from "../core/text.ts";
import { ProgramMissingError, runProgram } from "../host/process.ts";
import { binaryArgv, onPath } from "../host/self.ts";
import { homeDir, stateDir } from "../state/layout.ts";
import { readStateText, removeFile, writeFileAtomic } from "../state/store.ts";
import {
  decideInstall,
  decideUninstall,
  type Manager,
  type ServiceAction,
  type ServiceDecision,
  type ServiceSettings,
  unitName,
  unitPath,
  UNITS,
  type UnitState,
} from "./service_policy.ts";

/** Runs one command line; a missing program throws {@linkcode ProgramMissingError}. */
export type Runner = (argv: readonly string[]) => Promise<{
  code: number;
  stdout: string;
  stderr: string;
}>;

/**
 * The real runner, in the command's environment (`systemctl --user` finds the user's bus through
 * it): the program found on its PATH.
 */
export function programRunner(env: Readonly<Record<string, string>>): Runner {
  return async ([program, ...args]) => {
    const found = await onPath(program!, env.PATH);
    if (!found) throw new ProgramMissingError(program!);
    return await runProgram(found, args, { env: { ...env }, clearEnv: true, timeoutMs: 60_000 });
  };
}

/** The manager found, or why there is none. */
export type Detected = { manager: Manager } | { manager: "none"; reason: string };

/** What `systemctl --user is-system-running` prints when the user instance can run units. */
const USABLE = new Set(["running", "degraded", "starting", "initializing", "maintenance"]);

/** Finds the service manager: launchd on macOS, systemd's user instance where it runs. */
export async function detectManager(run: Runner, os: string): Promise<Detected> {
  const probe = os === "darwin"
    ? ["launchctl", "version"]
    : ["systemctl", "--user", "is-system-running"];
  let result;
  try {
    result = await run(probe);
  } catch (error) {
    if (!(error instanceof ProgramMissingError)) throw error;
    return { manager: "none", reason: `${probe[0]} is not installed` };
  }
  if (os === "darwin") return { manager: "launchd" };
  const answer = result.stdout.trim() || result.stderr.trim().split("\n")[0] ||
    `exit ${result.code}`;
  if (USABLE.has(result.stdout.trim())) return { manager: "systemd" };
  return {
    manager: "none",
    reason: `\`systemctl --user is-system-running\` says "${answer}": no systemd user instance`,
  };
}

/** Variables the units carry over from the installing shell, when set. */
const CARRIED = [
  "PATH",
  "LIFELINE_STATE_DIR",
  "XDG_STATE_HOME",
  "XDG_CONFIG_HOME",
  "CLAUDE_CONFIG_DIR",
  "TMUX_TMPDIR",
];

/** The settings the units are written with, for this environment. */
export function serviceSettings(
  env: Readonly<Record<string, string>>,
  { manager, binary, uid, prefix = "lifeline" }: {
    manager: Manager;
    binary: readonly string[];
    uid: number;
    prefix?: string;
  },
): ServiceSettings {
  const home = homeDir(env);
  const unitDir = manager === "systemd"
    ? joinPath(env.XDG_CONFIG_HOME || joinPath(home, ".config"), "systemd", "user")
    : joinPath(home, "Library", "LaunchAgents");
  const environment = Object.fromEntries(
    CARRIED.filter((name) => env[name]).map((name) => [name, env[name]!]),
  );
  return {
    manager,
    binary,
    unitDir,
    logDir: joinPath(stateDir(env), "logs"),
    home,
    environment,
    uid,
    prefix,
  };
}

/** The units as they are: their files, and what the manager says of each (one at a time). */
export async function readUnits(settings: ServiceSettings, run: Runner): Promise<UnitState[]> {
  const units: UnitState[] = [];
  for (const { key } of UNITS) {
    const path = unitPath(settings, key);
    const text = await readStateText(path, { root: dirName(path) }).catch((error) => {
      if (error instanceof Deno.errors.NotFound) return null;
      throw error;
    });
    const name = unitName(settings, key);
    if (settings.manager === "launchd") {
      const loaded = (await run(["launchctl", "print", `gui/${settings.uid}/${name}`])).code === 0;
      units.push({ key, text, enabled: loaded, active: loaded });
      continue;
    }
    const ask = async (verb: string) =>
      (await run(["systemctl", "--user", verb, name])).stdout.trim();
    const enabled = (await ask("is-enabled")) === "enabled";
    const active = ["active", "activating", "reloading"].includes(await ask("is-active"));
    units.push({ key, text, enabled, active });
  }
  return units;
}

/** Carries out the actions in order; a command that fails stops the rest, with its error. */
export async function applyActions(actions: readonly ServiceAction[], run: Runner): Promise<void> {
  for (const action of actions) {
    if (action.kind === "mkdir") await Deno.mkdir(action.path, { recursive: true });
    if (action.kind === "write") {
      await writeFileAtomic(action.path, action.text, { root: dirName(action.path), mode: 0o644 });
    }
    if (action.kind === "remove") {
      await removeFile(action.path, { root: dirName(action.path) }).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
    }
    if (action.kind === "run") {
      const result = await run(action.argv);
      if (result.code !== 0) {
        throw new CliError(
          `\`${action.argv.join(" ")}\` failed: ${result.stderr.trim() || `exit ${result.code}`}`,
          action.argv[0] === "systemctl"
            ? `see \`systemctl --user status ${action.argv.at(-1)}\``
            : "see `launchctl print gui/$(id -u)` for the agents launchd knows",
        );
      }
    }
  }
}

/** The one command that runs both in a detached tmux session, where there is no manager. */
export function tmuxFallback(binary: readonly string[]): string {
  const [watch, daemon] = UNITS.map((u) =>
    shellWord([...binary, ...u.args].map(shellWord).join(" "))
  );
  return `tmux new-session -d -s lifeline ${watch} \\; new-window -d -t lifeline: ${daemon}`;
}

/** This machine's service manager, and the units' settings (for its kind, even when unusable). */
export interface Services {
  detected: Detected;
  settings: ServiceSettings;
  run: Runner;
  /** The user's login name (`$USER`), to ask `loginctl` about lingering. */
  user: string | null;
}

/** The `--manager` flag's value, checked. Throws {@linkcode UsageError}. */
export function managerFlag(value: string | undefined): Manager | "none" | undefined {
  if (value === undefined || value === "systemd" || value === "launchd" || value === "none") {
    return value;
  }
  throw new UsageError(`--manager must be systemd, launchd or none, got "${value}"`);
}

/**
 * Finds the manager (or takes `manager` as given) and the settings the units get. The runner,
 * the platform and the user id default to this machine's; tests give their own.
 */
export async function openServices(
  env: Readonly<Record<string, string>>,
  { manager, prefix, run = programRunner(env), os = Deno.build.os, uid = Deno.uid() ?? 0 }: {
    manager?: Manager | "none" | undefined;
    prefix?: string;
    run?: Runner;
    os?: string;
    uid?: number;
  } = {},
): Promise<Services> {
  const detected: Detected = manager === undefined
    ? await detectManager(run, os)
    : manager === "none"
    ? { manager: "none", reason: "--manager none" }
    : { manager };
  // With no manager, the settings still name where its units would be, to remove leftovers.
  const kind = detected.manager !== "none"
    ? detected.manager
    : os === "darwin"
    ? "launchd"
    : "systemd";
  const binary = await binaryArgv(env, { absolute: true });
  const settings = serviceSettings(env, {
    manager: kind,
    binary,
    uid,
    ...(prefix ? { prefix } : {}),
  });
  return { detected, settings, run, user: env.USER || env.LOGNAME || null };
}

/** What became of each unit, for `--json`. */
export function changesJson({ changes }: ServiceDecision) {
  return changes.map(({ key, name, path, change }) => ({ unit: key, name, path, ...change }));
}

/** The units now; with no manager to ask, each counts as stopped: its file is all there is. */
export function unitsNow({ detected, settings, run }: Services): Promise<UnitState[]> {
  const silent: Runner = () => Promise.resolve({ code: 1, stdout: "", stderr: "" });
  return readUnits(settings, detected.manager === "none" ? silent : run);
}

/** What an install or uninstall did. */
export interface ServiceOutcome extends ServiceDecision {
  detected: Detected;
  /** systemd: whether the user's services outlive their login (`loginctl`), when known. */
  linger: boolean | null;
}

/** Installs (or updates) the units. With no manager, changes nothing. */
export async function installServices(services: Services): Promise<ServiceOutcome> {
  const { detected, settings, run, user } = services;
  if (detected.manager === "none") return { detected, actions: [], changes: [], linger: null };
  const decision = decideInstall(await readUnits(settings, run), settings);
  await applyActions(decision.actions, run);
  const linger = settings.manager === "systemd" && user ? await lingers(run, user) : null;
  return { ...decision, detected, linger };
}

/** Stops and removes the units; with no manager, removes the files alone. */
export async function uninstallServices(services: Services): Promise<ServiceOutcome> {
  const { detected, settings, run } = services;
  const decision = decideUninstall(await unitsNow(services), settings);
  const actions = detected.manager !== "none"
    ? decision.actions
    : decision.actions.filter((a) => a.kind !== "run");
  await applyActions(actions, run);
  return { ...decision, actions, detected, linger: null };
}

/** Whether systemd keeps this user's services running after they log out; null: unknown. */
async function lingers(run: Runner, user: string): Promise<boolean | null> {
  try {
    const result = await run(["loginctl", "show-user", user, "--property=Linger", "--value"]);
    return result.code === 0 ? result.stdout.trim() === "yes" : null;
  } catch {
    return null;
  }
}
