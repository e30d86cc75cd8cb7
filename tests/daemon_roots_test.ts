// `lifeline daemon stale` over many projects: every registered root without --root, each judged
// by its own config, roots that are gone dropped and said so, a start line, logs/daemon.log, and
// a notification when a session was scavenged. Real files, real registry, a real notify command.
import assert from "node:assert/strict";
import { registeredRoots, registerRoot } from "../lib/state/roots.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { registerSession } from "./helpers/sessions.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** A project with one session whose heartbeat is 15 minutes old and whose agent is gone. */
async function project(dir: string, name: string, config: unknown): Promise<string> {
  const root = `${dir}/${name}`;
  await Deno.mkdir(`${root}/.lifeline`, { recursive: true });
  await Deno.writeTextFile(`${root}/.lifeline/config.json`, JSON.stringify(config));
  await registerSession(root, `old-${name}`, { heartbeatAgo: 900 });
  return root;
}

/** A notify command that writes what it was told to `${dir}/notified`. */
async function notifier(dir: string): Promise<string> {
  const path = `${dir}/notify.sh`;
  await Deno.writeTextFile(
    path,
    `#!/bin/sh\nprintf '%s|%s|%s\\n' "$LIFELINE_EVENT" "$LIFELINE_SESSION" "$*" >> '${dir}/notified'\n`,
    { mode: 0o755 },
  );
  return path;
}

/**
 * Two projects: `a` waits a day before calling a session stale, `b` the default 300 s; `b` turns
 * tmux notices off. The notify command is the user's (a project may not choose what lifeline runs).
 */
async function twoProjects(dir: string) {
  const notify = await notifier(dir);
  await Deno.mkdir(`${dir}/home/.config/lifeline`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/home/.config/lifeline/config.json`,
    JSON.stringify({ notify: { command: [notify, "from-user"] } }),
  );
  const a = await project(dir, "a", { stale: { afterSeconds: 86_400 } });
  const b = await project(dir, "b", { notify: { tmux: false } });
  return { a, b };
}

const lines = (stdout: string) => stdout.trim().split("\n").map((line) => JSON.parse(line));

Deno.test({
  name: "without --root: every registered project, each by its own config; gone ones are dropped",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` };
      const { a, b } = await twoProjects(dir);
      // A project from before the registry, where the daemon is started (from a subdirectory).
      const here = `${dir}/here`;
      await Deno.mkdir(`${here}/.git`, { recursive: true });
      await Deno.mkdir(`${here}/src`);
      await registerSession(here, "old-here", { heartbeatAgo: 900 });
      const gone = `${dir}/gone`;
      await Deno.mkdir(gone);
      for (const root of [a, b, gone]) await registerRoot(env, root, { now: Date.now() });
      await Deno.remove(gone);

      const result = await runInProcess(["daemon", "stale", "--once", "--json"], {
        cwd: `${here}/src`,
        env,
      });
      assert.equal(result.code, 0, result.stderr);
      const [start, ...rest] = lines(result.stdout);
      assert.equal(start.event, "start");
      assert.deepEqual([...start.roots].sort(), [a, b, here].sort());
      assert.match(start.message, /^watching every registered project \(3 now: /);
      assert.match(start.message, / every 60 s; log .*\/state\/logs\/daemon\.log$/);
      const dropped = rest.filter((l) => l.event === "root_dropped");
      assert.deepEqual(dropped.map((l) => l.root), [gone]);
      assert.match(dropped[0].message, /no longer exists; dropped it from the registry/);
      assert.deepEqual([...await registeredRoots(env)].sort(), [a, b].sort());

      const by = Object.fromEntries(rest.filter((l) => l.session).map((l) => [l.session, l]));
      // a's own config waits a day: its session is not stale yet. b's default of 300 s: dead.
      assert.deepEqual([by["old-a"].state, by["old-a"].action], ["alive", "none"]);
      assert.deepEqual([by["old-b"].state, by["old-b"].action], ["dead", "scavenge"]);
      assert.deepEqual([by["old-here"].state, by["old-here"].action], ["dead", "scavenge"]);

      // Told through the user's notify command, once per scavenged session.
      const notified = (await Deno.readTextFile(`${dir}/notified`)).trim().split("\n").sort();
      assert.equal(notified.length, 2, notified.join("\n"));
      assert.match(
        notified[0]!,
        /^scavenged\|old-b\|from-user session old-b in .*\/b died \(no heartbeat for 9\d\ds and its agent process is gone\); its findings are in sessions\/old-b\/handoffs\/scavenged\.md$/,
      );
      assert.match(notified[1]!, /^scavenged\|old-here\|from-user session old-here in /);

      // The log keeps what happened, not every judgement of every tick.
      const log = lines(await Deno.readTextFile(`${dir}/state/logs/daemon.log`));
      assert.deepEqual(
        log.map((l) => l.event ?? `${l.session} ${l.action}`).sort(),
        ["old-b scavenge", "old-here scavenge", "root_dropped", "start"],
      );
    });
  },
});

Deno.test({
  name: "with --root: only those projects, each still by its own config (not the first one's)",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` };
      const { a, b } = await twoProjects(dir);
      await registerRoot(env, await project(dir, "registered", {}), { now: Date.now() });
      const result = await runInProcess(["daemon", "stale", "--once", "--root", a, "--root", b], {
        cwd: dir,
        env,
      });
      assert.equal(result.code, 0, result.stderr);
      const printed = result.stdout.trim().split("\n");
      assert.match(
        printed[0]!,
        new RegExp(
          `^\\S+Z watching 2 projects \\(${a}, ${b}\\) every 60 s; log ${dir}/state/logs/daemon\\.log$`,
        ),
      );
      // Only b's session is dead; the registered project is not looked at.
      assert.equal(printed.length, 2, result.stdout);
      assert.match(printed[1]!, new RegExp(`${b}: session old-b scavenge - no heartbeat for`));
      assert.equal(
        await Deno.readTextFile(`${a}/sessions/old-a/status`).catch(() => ""),
        "",
        "a's session is judged by a's config",
      );
    });
  },
});
