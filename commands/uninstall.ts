/**
 * `lifeline uninstall`: takes lifeline out: its hooks from every settings file that has them,
 * its services, and then a list of the state it leaves, with the commands to remove it.
 *
 * @module
 */

import { type Context, existingRoot, EXIT } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { registeredRoots } from "../lib/state/roots.ts";
import {
  changesJson,
  managerFlag,
  openServices,
  type ServiceOutcome,
  uninstallServices,
} from "../lib/setup/service.ts";
import {
  type Leftover,
  leftovers,
  removeFromSettings,
  settingsFiles,
  type SettingsRemoval,
} from "../lib/setup/uninstall.ts";

export const help =
  `Usage: lifeline uninstall [--root DIR] [--manager systemd|launchd|none] [--json]

Takes lifeline out, in three steps:

  1. hooks     lifeline init --remove for every settings file that has lifeline's hooks: the
               user's, and the project and local files of this project and of every project
               a session registered (each backed up first, its other entries kept)
  2. services  lifeline service uninstall
  3. the rest  lists what lifeline leaves, with the command that removes each: the projects'
               sessions/, logs/error-recovery.log, .lifeline/, harness; the git refs under
               refs/lifeline/ (rollback backups); the exclude block; the settings backups;
               lifeline's state directory; your config; the binary

It deletes no project state itself: a handoff or a backup may hold someone's work.
Exits 1 when a settings file could not be changed (it says which, and why).

Options:
  --root DIR      the project (default: .)
  --manager M     the service manager, as for service uninstall (default: the one found)
  --json          {"settings": [{"path", "removed", "backup"} | {"path", "error"}],
                   "services": {"manager", "units"}, "left": [{"what", "paths", "command"}]}
  -h, --help`;

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, {
    root: { type: "string" },
    manager: { type: "string" },
    json: { type: "boolean" },
  });
  const root = await existingRoot(values.root, ctx.cwd);
  const roots = [...new Set([root, ...await registeredRoots(ctx.env)])];
  const files = settingsFiles(ctx.env, roots);
  const settings = await removeFromSettings(files, { now: ctx.now() });
  const services = await uninstallServices(
    await openServices(ctx.env, { manager: managerFlag(values.manager) }),
  );
  const left = await leftovers(ctx.env, { roots, settings: files });
  if (values.json) {
    ctx.out.json({
      settings,
      services: { manager: services.detected.manager, units: changesJson(services) },
      left,
    });
  } else {
    for (const line of render(settings, services, left)) ctx.out.line(line);
  }
  return settings.some((s) => "error" in s) ? EXIT.error : EXIT.ok;
}

function render(settings: SettingsRemoval[], services: ServiceOutcome, left: Leftover[]): string[] {
  const lines = ["Hooks:"];
  if (settings.length === 0) lines.push("  no settings file has lifeline's hooks");
  for (const s of settings) {
    lines.push(
      "error" in s
        ? `  ${s.path}: left unchanged: ${s.error}`
        : `  ${s.path}: removed ${s.removed.length} hooks${
          s.backup ? ` (backup: ${s.backup})` : ""
        }`,
    );
  }
  lines.push("Services:");
  const removed = services.changes.filter((c) => c.change.kind === "removed");
  if (removed.length === 0) lines.push("  none installed");
  for (const { name, path } of removed) lines.push(`  ${name}: stopped and removed (${path})`);
  lines.push("Left in place (lifeline deletes no project state; remove what you do not want):");
  if (left.length === 0) lines.push("  nothing");
  for (const { what, command } of left) lines.push(`  ${what}:`, `    ${command}`);
  return lines;
}
