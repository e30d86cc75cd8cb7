/**
 * `lifeline service install | uninstall | status`: the watcher and the daemon as services of the
 * user's service manager (systemd user units, launchd agents), so they run across logouts and
 * reboots. One module holds the three: `commands/mod.ts` loads each from here.
 *
 * @module
 */

import { type CommandModule, type Context, EXIT } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import {
  changesJson,
  installServices,
  managerFlag,
  openServices,
  type Services,
  tmuxFallback,
  uninstallServices,
  unitsNow,
} from "../lib/setup/service.ts";
import { unitLog, unitName, unitPath, unitText } from "../lib/setup/service_policy.ts";

const options = `Options:
  --manager M   systemd, launchd, or none (print the tmux command); default: the one found
  --json        one JSON object
  -h, --help`;

const installHelp = `Usage: lifeline service install [--manager systemd|launchd|none] [--json]

Installs \`lifeline watch tmux\` and \`lifeline daemon stale\` as services that start at login and
restart when they fail:

  Linux   systemd user units lifeline-watch.service and lifeline-daemon.service in
          ~/.config/systemd/user/ ($XDG_CONFIG_HOME), enabled and started (systemctl --user)
  macOS   launchd agents dev.lifeline.watch and dev.lifeline.daemon in ~/Library/LaunchAgents/,
          loaded (launchctl bootstrap)

The units call this lifeline by its absolute path (from source: deno, its flags and main.ts),
carry PATH and lifeline's own locations over, and send their stderr to lifeline's state
directory (logs/watch.service.log, logs/daemon.service.log); what they do is in \`lifeline logs\`.
Running it again changes nothing, and says so; a changed binary path updates the units and
restarts them. Where there is neither manager (a container, WSL without systemd), it says so and
prints the one command that runs both in a detached tmux session instead, and exits 1.

${options}`;

const uninstallHelp = `Usage: lifeline service uninstall [--manager systemd|launchd|none] [--json]

Stops and removes the units \`lifeline service install\` wrote; nothing else.

${options}`;

const statusHelp = `Usage: lifeline service status [--manager systemd|launchd|none] [--json]

Shows the service manager, and for each unit its file, whether it is what install would write
now, and whether it is enabled and running.

${options}`;

/** `lifeline service install`. */
export const install: CommandModule = { help: installHelp, run: runInstall };

/** `lifeline service uninstall`. */
export const uninstall: CommandModule = { help: uninstallHelp, run: runUninstall };

/** `lifeline service status`. */
export const status: CommandModule = { help: statusHelp, run: runStatus };

async function open(ctx: Context): Promise<{ services: Services; json: boolean }> {
  const { values } = parseFlags(ctx.args, {
    manager: { type: "string" },
    json: { type: "boolean" },
  });
  const services = await openServices(ctx.env, { manager: managerFlag(values.manager) });
  return { services, json: values.json === true };
}

async function runInstall(ctx: Context): Promise<number> {
  const { services, json } = await open(ctx);
  const outcome = await installServices(services);
  const { detected, settings } = services;
  const fallback = tmuxFallback(settings.binary);
  if (json) {
    ctx.out.json({
      manager: detected.manager,
      ...("reason" in detected ? { reason: detected.reason, fallback } : {}),
      units: changesJson(outcome),
      linger: outcome.linger,
    });
  } else if ("reason" in detected) {
    ctx.out.line(`No service manager to install into: ${detected.reason}.`);
    ctx.out.line("Run both in a detached tmux session instead (it does not survive a reboot):");
    ctx.out.line(`  ${fallback}`);
  } else {
    for (const { name, path, change } of outcome.changes) {
      const what = change.kind === "updated"
        ? `updated (${change.from === change.to ? "its settings changed" : `was: ${change.from}`})`
        : change.kind;
      ctx.out.line(`${name.padEnd(24)} ${what}: ${path}`);
    }
    const changed = outcome.actions.length > 0;
    ctx.out.line(
      changed
        ? "The watcher and the daemon run as services now; follow them with `lifeline logs`."
        : "Nothing changed: both services are installed, enabled and running.",
    );
    if (outcome.linger === false) {
      ctx.out.line(
        `note: they stop when you log out; \`loginctl enable-linger ${services.user}\` keeps them running`,
      );
    }
  }
  return "reason" in detected ? EXIT.error : EXIT.ok;
}

async function runUninstall(ctx: Context): Promise<number> {
  const { services, json } = await open(ctx);
  const outcome = await uninstallServices(services);
  if (json) {
    ctx.out.json({ manager: services.detected.manager, units: changesJson(outcome) });
    return EXIT.ok;
  }
  for (const { name, path, change } of outcome.changes) {
    ctx.out.line(
      `${name.padEnd(24)} ${
        change.kind === "removed" ? "stopped and removed" : "not installed"
      }: ${path}`,
    );
  }
  return EXIT.ok;
}

async function runStatus(ctx: Context): Promise<number> {
  const { services, json } = await open(ctx);
  const { detected, settings } = services;
  const units = (await unitsNow(services)).map((unit) => ({
    unit: unit.key,
    name: unitName(settings, unit.key),
    path: unitPath(settings, unit.key),
    installed: unit.text !== null,
    current: unit.text === unitText(settings, unit.key),
    enabled: unit.enabled,
    active: unit.active,
    log: unitLog(settings, unit.key),
  }));
  if (json) {
    ctx.out.json({
      manager: detected.manager,
      ...("reason" in detected
        ? { reason: detected.reason, fallback: tmuxFallback(settings.binary) }
        : {}),
      units,
    });
    return EXIT.ok;
  }
  ctx.out.line(
    `service manager: ${"reason" in detected ? `none (${detected.reason})` : detected.manager}`,
  );
  for (const u of units) {
    const state = !u.installed ? "not installed" : [
      u.current ? "up to date" : "out of date (run `lifeline service install`)",
      u.enabled ? "enabled" : "disabled",
      u.active ? "running" : "stopped",
    ].join(", ");
    ctx.out.line(`  ${u.unit.padEnd(6)}  ${state}: ${u.path}`);
  }
  if ("reason" in detected) ctx.out.line(`instead: ${tmuxFallback(settings.binary)}`);
  return EXIT.ok;
}
