/**
 * `lifeline doctor`: checks a setup and says, for each problem, the fix in one line.
 *
 * @module
 */

import { type Context, EXIT } from "../lib/core/cli.ts";
import { projectRoot, rootLines } from "../lib/state/project_root.ts";
import { relativeTo } from "../lib/core/path.ts";
import { type Config, ConfigError, DEFAULT_CONFIG, loadConfig } from "../lib/state/config.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { HOOK_NAMES } from "../lib/claude/hook_names.ts";
import { runProgram } from "../lib/host/process.ts";
import { readKillSwitch } from "../lib/state/kill_switch.ts";
import { joinPath } from "../lib/core/path.ts";
import { killSwitchPath, projectPaths, stateDir } from "../lib/state/layout.ts";
import {
  allSettingsPaths,
  commandHooks,
  lifelineHookOf,
  matcherProblem,
  matchers,
  readSettings,
} from "../lib/claude/settings.ts";
import { describeError, readStateText } from "../lib/state/store.ts";
import { onPath } from "../lib/host/self.ts";
import { runningInstances } from "../lib/state/instances.ts";
import { harnessChecks } from "../lib/harness/housekeeping.ts";

export const help = `Usage: lifeline doctor [--root DIR] [--json]

Checks the setup; each check prints ok, warn or fail, with the fix in one line:

  settings     every settings file (user, project, local, managed) parses; on a syntax error,
               its line and column (the usual reason a hook setup breaks at startup)
  hooks        hooks that call lifeline use a command that exists, and a real hook name
  matchers     matchers are valid regexes; "mcp__server" without "__.*" matches nothing
  binary       lifeline is on PATH
  tmux         tmux is installed (watch tmux needs it), and its version
  state        the project's and lifeline's own state directories are writable
  config       the config files are valid
  self-heal    the kill switch's state
  watchers     whether a tmux watcher or stale-session daemon runs (its lock is held)
  corrupt      corrupt or quarantined state files
  claims       stale claim locks
  harness      the loop harness's global iteration budget (fail handle stops every task at
               max_iterations), when there is a harness
  backups      what rollback backups add to the repository, against breaker.maxBackupsMB

Exits 1 when any check fails.

Options:
  --root DIR   the project (default: the nearest .claude/ or git top level at or above .)
  --json       {"root", "ok", "checks": [{"name", "status", "message", "fix"}]}
  -h, --help`;

/** One check's result. */
export interface Check {
  name: string;
  status: "ok" | "warn" | "fail";
  message: string;
  fix?: string;
}

async function settingsChecks(
  ctx: Context,
  root: string,
): Promise<{ checks: Check[]; parsed: { scope: string; value: Record<string, unknown> }[] }> {
  const checks: Check[] = [];
  const parsed: { scope: string; value: Record<string, unknown> }[] = [];
  for (const { scope, path } of allSettingsPaths(ctx.env, root)) {
    let read;
    try {
      read = await readSettings(path);
    } catch (error) {
      checks.push({
        name: "settings",
        status: "fail",
        message: `${scope}: cannot read ${path}: ${describeError(error)}`,
        fix: "check the file's permissions",
      });
      continue;
    }
    if (read.kind === "missing") {
      checks.push({ name: "settings", status: "ok", message: `${scope}: ${path} (not present)` });
    } else if (read.kind === "invalid") {
      checks.push({
        name: "settings",
        status: "fail",
        message:
          `${scope}: ${path} is not valid JSON at line ${read.line}, column ${read.column}: ${read.reason}`,
        fix:
          `fix line ${read.line} of ${path} (often a trailing comma); Claude Code ignores the whole file until then`,
      });
    } else if (read.kind === "not an object") {
      checks.push({
        name: "settings",
        status: "fail",
        message: `${scope}: ${path} holds ${read.found}, not a JSON object`,
        fix: `make ${path} one JSON object, e.g. {"hooks": {}}`,
      });
    } else {
      checks.push({ name: "settings", status: "ok", message: `${scope}: ${path} parses` });
      parsed.push({ scope, value: read.value });
    }
  }
  return { checks, parsed };
}

async function hookChecks(
  ctx: Context,
  parsed: { scope: string; value: Record<string, unknown> }[],
): Promise<Check[]> {
  const checks: Check[] = [];
  let lifelineHooks = 0;
  for (const { scope, value } of parsed) {
    for (const { event, command } of commandHooks(value)) {
      if (!/lifeline|main\.ts/.test(command)) continue;
      const hook = lifelineHookOf(command);
      const named = /\bhook\s+(\S+)/.exec(command)?.[1];
      if (!hook) {
        if (named && !(HOOK_NAMES as readonly string[]).includes(named)) {
          checks.push({
            name: "hooks",
            status: "fail",
            message: `${scope} ${event}: "${command}" runs an unknown hook "${named}"`,
            fix: `use one of: ${HOOK_NAMES.join(", ")}`,
          });
        }
        continue;
      }
      lifelineHooks++;
      const first = /^"([^"]+)"|^(\S+)/.exec(command.trim());
      const program = first?.[1] ?? first?.[2] ?? "";
      const exists = program.includes("/") || program.includes("\\")
        ? await Deno.stat(program).then((s) => s.isFile, () => false)
        : (await onPath(program, ctx.env.PATH)) !== null;
      checks.push(
        exists ? { name: "hooks", status: "ok", message: `${scope} ${event}: ${command}` } : {
          name: "hooks",
          status: "fail",
          message: `${scope} ${event}: "${program}" does not exist`,
          fix: "install lifeline on PATH, or run `lifeline init` again to point the hooks at it",
        },
      );
    }
    for (const { event, matcher } of matchers(value)) {
      const problem = matcherProblem(matcher);
      if (problem) {
        checks.push({
          name: "matchers",
          status: problem.level,
          message: `${scope} ${event}: ${problem.message}`,
          fix: "edit the matcher in the settings file",
        });
      }
    }
  }
  if (lifelineHooks === 0) {
    checks.push({
      name: "hooks",
      status: "warn",
      message: "no settings file runs lifeline's hooks",
      fix: "run `lifeline init`",
    });
  }
  if (!checks.some((c) => c.name === "matchers")) {
    checks.push({ name: "matchers", status: "ok", message: "every matcher is valid" });
  }
  return checks;
}

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

async function walkFiles(
  dir: string,
  depth: number,
  visit: (path: string, name: string) => Promise<void>,
) {
  try {
    for await (const entry of Deno.readDir(dir)) {
      const path = joinPath(dir, entry.name);
      if (entry.isDirectory && depth > 0) await walkFiles(path, depth - 1, visit);
      else if (entry.isFile) await visit(path, entry.name);
    }
  } catch {
    // missing: nothing to check
  }
}

/** Runs every check. */
export async function runChecks(ctx: Context, root: string): Promise<Check[]> {
  const checks: Check[] = [];
  const settings = await settingsChecks(ctx, root);
  checks.push(...settings.checks, ...await hookChecks(ctx, settings.parsed));

  const binary = await onPath("lifeline", ctx.env.PATH);
  const bareHooks = settings.parsed.some(({ value }) =>
    commandHooks(value).some((h) => /^lifeline\s/.test(h.command))
  );
  checks.push(
    binary ? { name: "binary", status: "ok", message: `lifeline is on PATH: ${binary}` } : {
      name: "binary",
      status: bareHooks ? "fail" : "warn",
      message: "lifeline is not on PATH",
      fix: "put the lifeline binary in a PATH directory (e.g. ~/.local/bin)",
    },
  );

  try {
    const out = await runProgram("tmux", ["-V"]);
    checks.push({ name: "tmux", status: "ok", message: out.stdout.trim() });
  } catch {
    checks.push({
      name: "tmux",
      status: "warn",
      message: "tmux is not installed: `lifeline watch tmux` cannot run",
      fix: "install tmux (apt install tmux, brew install tmux)",
    });
  }

  for (
    const [what, dir] of [["project state", root], [
      "lifeline's own state",
      stateDir(ctx.env),
    ]] as const
  ) {
    const problem = await writable(dir);
    checks.push(
      problem === null ? { name: "state", status: "ok", message: `${what} is writable: ${dir}` } : {
        name: "state",
        status: "fail",
        message: `${what} is not writable: ${dir} (${problem})`,
        fix: `make ${dir} writable; hooks stay silent (fail open) until then`,
      },
    );
  }

  let config: Config = DEFAULT_CONFIG;
  try {
    config = await loadConfig(ctx.env, root);
    checks.push({ name: "config", status: "ok", message: "config files are valid (or absent)" });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    checks.push({
      name: "config",
      status: "fail",
      message: error.message,
      fix: "fix the file, or remove it to use the defaults",
    });
  }

  const killSwitch = await readKillSwitch(killSwitchPath(ctx.env));
  checks.push(
    killSwitch.state === "unknown"
      ? {
        name: "self-heal",
        status: "warn",
        message: `cannot check ${killSwitch.path}: ${killSwitch.error}`,
        fix: "check that directory's permissions",
      }
      : {
        name: "self-heal",
        status: "ok",
        message: `self-heal is ${killSwitch.state} (${killSwitch.path} ${
          killSwitch.state === "off" ? "exists" : "does not exist"
        })`,
      },
  );

  const { watchers, daemons } = await runningInstances(ctx.env);
  checks.push(
    watchers.length > 0
      ? {
        name: "watchers",
        status: "ok",
        message: `tmux watcher running: ${
          watchers.map((w) => `${w.name} (pid ${w.pid ?? "?"})`).join(", ")
        }`,
      }
      : {
        name: "watchers",
        status: "warn",
        message: "no tmux watcher is running",
        fix: "run `lifeline watch tmux` in a background shell",
      },
  );
  checks.push(
    daemons.length > 0
      ? {
        name: "watchers",
        status: "ok",
        message: `stale-session daemon running: ${
          daemons.map((d) => `pid ${d.pid ?? "?"}`).join(", ")
        }`,
      }
      : {
        name: "watchers",
        status: "warn",
        message: "no stale-session daemon is running",
        fix: "run `lifeline daemon stale` in a background shell (it looks after every project)",
      },
  );

  const quarantined: string[] = [];
  const corrupt: string[] = [];
  const p = projectPaths(root);
  await walkFiles(p.sessions, 2, async (path, name) => {
    if (/\.corrupt-/.test(name)) quarantined.push(relativeTo(root, path));
    else if (/\.json$/.test(name)) {
      try {
        JSON.parse(await readStateText(path, { root }));
      } catch {
        corrupt.push(relativeTo(root, path));
      }
    }
  });
  checks.push(
    corrupt.length > 0
      ? {
        name: "corrupt",
        status: "fail",
        message: `state files that do not parse: ${corrupt.join(", ")}`,
        fix: "the next update moves them aside; or move them aside yourself",
      }
      : quarantined.length > 0
      ? {
        name: "corrupt",
        status: "warn",
        message: `quarantined files (corrupt, moved aside): ${quarantined.join(", ")}`,
        fix: "look at them, then delete them",
      }
      : { name: "corrupt", status: "ok", message: "no corrupt or quarantined state files" },
  );

  const stale: string[] = [];
  const limit = config.crash.claimStaleMinutes * 60_000;
  await walkFiles(p.claims, 4, async (path, name) => {
    if (!name.endsWith(".lock")) return;
    const mtime = (await Deno.stat(path)).mtime?.getTime() ?? ctx.now();
    if (ctx.now() - mtime > limit) stale.push(relativeTo(root, path));
  });
  checks.push(
    stale.length > 0
      ? {
        name: "claims",
        status: "warn",
        message: `stale claim locks (older than ${config.crash.claimStaleMinutes} min): ${
          stale.join(", ")
        }`,
        fix: "the next session start (hook crash) removes them unless their owner still runs",
      }
      : { name: "claims", status: "ok", message: "no stale claim locks" },
  );
  checks.push(...await harnessChecks(root, config));
  return checks;
}

export async function run(ctx: Context): Promise<number> {
  const { values } = parseFlags(ctx.args, { root: { type: "string" }, json: { type: "boolean" } });
  const found = await projectRoot(values.root, ctx);
  const root = found.root;
  const checks = await runChecks(ctx, root);
  const failed = checks.some((c) => c.status === "fail");
  if (values.json) {
    ctx.out.json({ root, ok: !failed, checks });
  } else {
    for (const line of rootLines(found, ctx.cwd)) ctx.out.line(line);
    for (const c of checks) {
      ctx.out.line(`${c.status.padEnd(4)}  ${c.name.padEnd(9)}  ${c.message}`);
      if (c.fix && c.status !== "ok") ctx.out.line(`${"".padEnd(17)}fix: ${c.fix}`);
    }
    ctx.out.line(failed ? "Some checks failed." : "No check failed.");
  }
  return failed ? EXIT.error : EXIT.ok;
}
