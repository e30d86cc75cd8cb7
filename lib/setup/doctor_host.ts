/**
 * `doctor`'s checks of the machine: tmux, writable state, the config, the kill switch, whether
 * the watcher and the daemon run, and whether git would commit lifeline's state.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { runProgram } from "../host/process.ts";
import { killSwitchPath, stateDir } from "../state/layout.ts";
import { readKillSwitch } from "../state/kill_switch.ts";
import { describeError } from "../state/store.ts";
import { type Check, type DoctorCheck, fail, ok, warn } from "./check.ts";
import { gitStateReport } from "./git_exclude.ts";
import { runningInstances } from "../state/instances.ts";

/** tmux is installed (watch tmux needs it), and its version. */
export const tmuxCheck: DoctorCheck = {
  name: "tmux",
  summary: "tmux is installed (watch tmux needs it), and its version",
  async run() {
    try {
      return [ok("tmux", (await runProgram("tmux", ["-V"])).stdout.trim())];
    } catch {
      return [warn(
        "tmux",
        "tmux is not installed: `lifeline watch tmux` cannot run",
        "install tmux (apt install tmux, brew install tmux)",
      )];
    }
  },
};

async function writable(dir: string): Promise<string | null> {
  try {
    await Deno.mkdir(dir, { recursive: true });
    const probe = joinPath(dir, `.lifeline-doctor-${crypto.randomUUID().slice(0, 8)}`);
    await Deno.writeTextFile(probe, "");
    await Deno.remove(probe);
    return null;
  } catch (error) {
    return describeError(error);
  }
}

/** The project's and lifeline's own state directories are writable. */
export const stateCheck: DoctorCheck = {
  name: "state",
  summary: "the project's and lifeline's own state directories are writable",
  async run({ root, env }) {
    const checks: Check[] = [];
    for (const [what, dir] of [["project state", root], ["lifeline's own state", stateDir(env)]]) {
      const problem = await writable(dir!);
      checks.push(
        problem === null ? ok("state", `${what} is writable: ${dir}`) : fail(
          "state",
          `${what} is not writable: ${dir} (${problem})`,
          `make ${dir} writable; hooks stay silent (fail open) until then`,
        ),
      );
    }
    return checks;
  },
};

/** lifeline's per-session state is neither tracked by git nor left for `git add -A`. */
export const gitCheck: DoctorCheck = {
  name: "git",
  summary: "lifeline's per-session state is not tracked by git, and is ignored\n" +
    "(lifeline init adds it to .git/info/exclude)",
  async run({ root }) {
    const report = await gitStateReport(root).catch((error) => describeError(error));
    if (report === null) return [ok("git", "not a git repository: nothing to keep out of commits")];
    if (typeof report === "string") {
      return [warn("git", `cannot ask git about lifeline's state: ${report}`, "check git status")];
    }
    const checks: Check[] = [];
    if (report.trackedCount > 0) {
      const more = report.trackedCount - report.tracked.length;
      checks.push(warn(
        "git",
        `git tracks lifeline's state: ${report.tracked.join(", ")}${
          more ? ` and ${more} more` : ""
        }`,
        "untrack it (`git rm -r --cached <path>`, the files stay), then run `lifeline init`",
      ));
    }
    if (report.unignored.length > 0) {
      checks.push(warn(
        "git",
        `lifeline's state is not ignored by git (${report.unignored.slice(0, 3).join(", ")}, …): ` +
          "`git add -A` would commit it",
        "run `lifeline init` (it adds the state to .git/info/exclude)",
      ));
    }
    return checks.length > 0
      ? checks
      : [ok("git", "lifeline's state is ignored by git, and none of it is tracked")];
  },
};

/** The config files are valid. */
export const configCheck: DoctorCheck = {
  name: "config",
  summary: "the config files are valid",
  async run(facts) {
    const { error } = await facts.config();
    return [
      error === null ? ok("config", "config files are valid (or absent)") : fail(
        "config",
        error.message,
        "fix the file, or remove it to use the defaults",
      ),
    ];
  },
};

/** The kill switch's state. */
export const selfHealCheck: DoctorCheck = {
  name: "self-heal",
  summary: "the kill switch's state",
  async run({ env }) {
    const killSwitch = await readKillSwitch(killSwitchPath(env));
    if (killSwitch.state === "unknown") {
      return [warn(
        "self-heal",
        `cannot check ${killSwitch.path}: ${killSwitch.error}`,
        "check that directory's permissions",
      )];
    }
    const exists = killSwitch.state === "off" ? "exists" : "does not exist";
    return [ok("self-heal", `self-heal is ${killSwitch.state} (${killSwitch.path} ${exists})`)];
  },
};

/** The single-instance locks held in `dir`, with the pid each holder wrote. */
/** Whether a tmux watcher or stale-session daemon runs (its lock is held). */
export const watchersCheck: DoctorCheck = {
  name: "watchers",
  summary: "whether a tmux watcher or stale-session daemon runs (its lock is held)",
  async run({ env }) {
    const { watchers, daemons } = await runningInstances(env);
    const servers = watchers.map((w) => `${w.name} (pid ${w.pid ?? "?"})`).join(", ");
    const pids = daemons.map((d) => `pid ${d.pid ?? "?"}`).join(", ");
    return [
      watchers.length > 0 ? ok("watchers", `tmux watcher running: ${servers}`) : warn(
        "watchers",
        "no tmux watcher is running",
        "run `lifeline service install`, or `lifeline watch tmux` in a background shell",
      ),
      daemons.length > 0 ? ok("watchers", `stale-session daemon running: ${pids}`) : warn(
        "watchers",
        "no stale-session daemon is running",
        "run `lifeline service install`, or `lifeline daemon stale` in a background shell " +
          "(it looks after every project)",
      ),
    ];
  },
};
