/**
 * Demo: setting lifeline up with `init`, checking it with `doctor`, and looking at everything the
 * earlier sections left behind with `status`.
 *
 * @module
 */

import { installLifelineWrapper } from "../tests/helpers/lifeline.ts";
import { listDir } from "../tests/helpers/temp.ts";
import type { DemoPlace } from "./hooks.ts";
import { expect, heading, lifeline, say, show, step } from "./narrate.ts";

/** `init`, `doctor` and `status` on the demo's project and loop repository. */
export async function demoSetup(
  { project, env }: DemoPlace,
  scratch: string,
  loopRepo: string,
): Promise<void> {
  heading("init, doctor, status: set up in a minute, then see everything at a glance");
  step("`lifeline` is put on PATH (a wrapper standing in for the release binary)");
  await installLifelineWrapper(`${scratch}/bin`);
  const onPath = { ...env, PATH: `${scratch}/bin:${env.PATH}` };
  const run = (args: string[], quiet = false) =>
    lifeline(args, { env: onPath, cwd: project, quiet });

  step("The project already has settings with its own hook; `--dry-run` shows what would change");
  const settings = `${project}/.claude/settings.json`;
  await Deno.mkdir(`${project}/.claude`, { recursive: true });
  const own = {
    permissions: { allow: ["Bash(npm test)"] },
    hooks: {
      PreToolUse: [{
        matcher: "Bash",
        hooks: [{ type: "command", command: "./scripts/guard.sh" }],
      }],
    },
  };
  await Deno.writeTextFile(settings, JSON.stringify(own, null, 2) + "\n");
  const dry = await run(["init", "--scope", "project", "--dry-run"], true);
  show(dry.stdout.split("\n").filter((line) => line.startsWith("+ ")).join("\n"));
  expect(
    JSON.parse(await Deno.readTextFile(settings)).hooks.SessionStart === undefined,
    "--dry-run writes nothing",
  );

  step("`lifeline init --scope project` merges the hooks, keeps the rest, and backs up the file");
  await run(["init", "--scope", "project"]);
  const merged = JSON.parse(await Deno.readTextFile(settings));
  say("  .claude/settings.json now has:");
  show(
    Object.entries(merged.hooks as Record<string, { hooks: { command: string }[] }[]>)
      .map(([event, groups]) =>
        `${event}: ${groups.flatMap((g) => g.hooks.map((h) => h.command)).join(", ")}`
      )
      .join("\n"),
  );
  const backups = (await listDir(`${project}/.claude`))
    .filter((name) => name.startsWith("settings.json.bak-"));
  say(`  and the old file is kept as .claude/${backups[0]}`);
  expect(merged.permissions.allow[0] === "Bash(npm test)", "other keys are kept");
  expect(merged.hooks.PreToolUse[0].hooks[0].command === "./scripts/guard.sh", "own hook kept");
  expect(backups.length === 1, "one backup");
  step("Running it again changes nothing");
  const again = await run(["init", "--scope", "project"]);
  expect(/nothing changed/.test(again.stdout), "init is idempotent");

  step("`lifeline doctor` checks the setup");
  const doctor = await run(["doctor"]);
  expect(doctor.code === 0, "no check fails");

  step("`lifeline status` shows what the sections above left: sessions, watched panes, advice");
  const status = await run(["status"]);
  expect(/scavenged/.test(status.stdout), "the rescued session is shown as scavenged");
  step("and, in the loop's repository, its open circuit breakers");
  const loop = await lifeline(["status", "--root", loopRepo], { env: onPath, quiet: true });
  show(loop.stdout.split("\n").filter((line) => line.startsWith("open breakers")).join("\n"));
  expect(/open breakers: \S/.test(loop.stdout), "the breaker from scenario 3 is shown");
}
