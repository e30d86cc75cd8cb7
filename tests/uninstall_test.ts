// `lifeline uninstall`: the hooks out of every settings file that has them (this project's, a
// registered project's, the user's), the services stopped and removed, and a list of what is
// left whose commands, run as printed, remove it; the state itself is left alone.
import assert from "node:assert/strict";
import { fakeSystemctl } from "./helpers/fake_service_manager.ts";
import { git, makeRepo } from "./helpers/git_repo.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { registerSession } from "./helpers/sessions.ts";
import { withTempDir } from "./helpers/temp.ts";
import { registerRoot } from "../lib/state/roots.ts";

const IGNORE = Deno.build.os === "windows";

interface Left {
  what: string;
  paths: string[];
  command: string;
}

/** Two projects wired by `init`, one of them registered only, services installed. */
async function installed(dir: string) {
  const manager = await fakeSystemctl(dir, { unitDir: `${dir}/home/.config/systemd/user` });
  await Deno.mkdir(`${dir}/bin`);
  await Deno.writeTextFile(`${dir}/bin/lifeline`, "#!/bin/sh\nexec sleep 300\n");
  await Deno.chmod(`${dir}/bin/lifeline`, 0o755);
  const env = { HOME: `${dir}/home`, PATH: `${manager.bin}:${dir}/bin:/usr/bin:/bin` };
  const run = (cwd: string, ...args: string[]) => runInProcess(args, { cwd, env });
  const project = await makeRepo(`${dir}/project`);
  const other = `${dir}/other`;
  await Deno.mkdir(`${other}/.claude`, { recursive: true });
  await Deno.writeTextFile(`${other}/.claude/settings.local.json`, '{"model": "opus"}\n');
  for (const [cwd, scope] of [[project, "project"], [project, "user"], [other, "local"]]) {
    assert.equal((await run(cwd!, "init", "--scope", scope!)).code, 0);
  }
  await Deno.mkdir(`${dir}/home/.local/state/lifeline`, { recursive: true });
  await registerRoot(env, other, { now: Date.now() });
  await registerSession(project, "s1", { heartbeatAgo: 10 });
  await git(project, "update-ref", "refs/lifeline/stable", "HEAD");
  assert.equal((await run(project, "service", "install")).code, 0);
  await manager.clear();
  return { env, run, project, other, manager };
}

Deno.test({
  name: "uninstall takes the hooks out everywhere, removes the services, and lists what is left",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { env, run, project, other, manager } = await installed(dir);
      const result = await run(project, "uninstall", "--json");
      assert.equal(result.code, 0, result.stderr);
      const out = JSON.parse(result.stdout);
      assert.deepEqual(out.settings.map((s: { path: string }) => s.path), [
        `${dir}/home/.claude/settings.json`,
        `${project}/.claude/settings.json`,
        `${other}/.claude/settings.local.json`,
      ]);
      assert.ok(out.settings.every((s: { removed: string[] }) => s.removed.length === 8));
      assert.deepEqual(
        JSON.parse(await Deno.readTextFile(`${other}/.claude/settings.local.json`)),
        {
          model: "opus",
        },
      );
      assert.deepEqual(await manager.calls().then((c) => c.filter((l) => !/ is-/.test(l))), [
        "systemctl --user disable --now lifeline-watch.service",
        "systemctl --user disable --now lifeline-daemon.service",
        "systemctl --user daemon-reload",
      ]);
      // Nothing of the project's state is gone.
      assert.ok((await Deno.stat(`${project}/sessions/s1/heartbeat`)).isFile);
      assert.equal(
        await git(project, "for-each-ref", "--format=%(refname)", "refs/lifeline/"),
        "refs/lifeline/stable",
      );
      const left: Left[] = out.left;
      const whats = left.map((l) => l.what).join("\n");
      assert.match(whats, /project state in .*\/project/);
      assert.match(whats, /1 git refs under refs\/lifeline\//);
      assert.match(whats, /the block that keeps lifeline's state out of git/);
      assert.match(whats, /4 backups of settings files/);
      assert.match(whats, /lifeline's state directory/);
      assert.match(whats, /the lifeline binary/);

      // The commands, run as printed, remove what they say.
      for (const { command } of left) {
        const shell = await new Deno.Command("sh", { args: ["-c", command], env, clearEnv: true })
          .output();
        assert.ok(shell.success, `${command}: ${new TextDecoder().decode(shell.stderr)}`);
      }
      assert.equal(await git(project, "for-each-ref", "refs/lifeline/"), "");
      assert.doesNotMatch(
        await Deno.readTextFile(`${project}/.git/info/exclude`),
        /lifeline: begin/,
      );
      await assert.rejects(Deno.stat(`${project}/sessions`), Deno.errors.NotFound);
      await assert.rejects(Deno.stat(`${dir}/home/.local/state/lifeline`), Deno.errors.NotFound);
    });
  },
});

Deno.test({
  name: "uninstall a second time finds nothing to take out, and says so",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { run, project } = await installed(dir);
      assert.equal((await run(project, "uninstall")).code, 0);
      const again = await run(project, "uninstall");
      assert.equal(again.code, 0, again.stderr);
      assert.match(
        again.stdout,
        /^Hooks:\n {2}no settings file has lifeline's hooks\nServices:\n {2}none installed\n/,
      );
      assert.match(again.stdout, /^Left in place \(lifeline deletes no project state/m);
    });
  },
});

Deno.test({
  name: "uninstall names a settings file it cannot change, goes on with the rest, and exits 1",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { run, project } = await installed(dir);
      const broken = `${project}/.claude/settings.json`;
      await Deno.writeTextFile(
        broken,
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "lifeline hook track"}]}]},}',
      );
      const result = await run(project, "uninstall");
      assert.equal(result.code, 1);
      assert.match(result.stdout, /settings\.json: left unchanged: .* is not valid JSON at line 1/);
      assert.match(result.stdout, /home\/\.claude\/settings\.json: removed 8 hooks \(backup: /);
      assert.match(result.stdout, /lifeline-watch\.service: stopped and removed/);
    });
  },
});
