// `lifeline init --remove`: takes lifeline's hooks out of a settings file and nothing else, with
// a backup, the file's mode kept and a link written where it leads, like `init` itself.
import assert from "node:assert/strict";
import { runInProcess } from "./helpers/in_process.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** `lifeline <args>` in `<dir>/project`, HOME `<dir>/home`, a `lifeline` on PATH. */
async function lifeline(dir: string, ...args: string[]) {
  await Deno.mkdir(`${dir}/project/.claude`, { recursive: true });
  await Deno.mkdir(`${dir}/bin`, { recursive: true });
  await Deno.writeTextFile(`${dir}/bin/lifeline`, "#!/bin/sh\n");
  await Deno.chmod(`${dir}/bin/lifeline`, 0o755);
  return await runInProcess(args, {
    cwd: `${dir}/project`,
    env: { HOME: `${dir}/home`, PATH: `${dir}/bin:/usr/bin:/bin` },
  });
}

/** A user's settings: their own keys and hooks, one sharing lifeline's matcher group. */
const USERS_OWN = {
  model: "sonnet",
  permissions: { allow: ["Bash(git *)"] },
  hooks: {
    PostToolUse: [
      { matcher: "Edit|Write", hooks: [{ type: "command", command: "prettier --write" }] },
      { matcher: "*", hooks: [{ type: "command", command: "audit-log" }] },
    ],
    Notification: [{ hooks: [{ type: "command", command: "notify-send hi" }] }],
    PreCompact: [],
  },
};

Deno.test({
  name: "init --remove takes out lifeline's hooks and nothing else, with a backup",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const path = `${dir}/project/.claude/settings.json`;
      await Deno.mkdir(`${dir}/project/.claude`, { recursive: true });
      await Deno.writeTextFile(path, JSON.stringify(USERS_OWN, null, 4));
      const added = await lifeline(dir, "init", "--scope", "project");
      assert.equal(added.code, 0, added.stderr);
      // A lifeline hook in the user's own "*" group, next to their audit-log.
      const installed = JSON.parse(await Deno.readTextFile(path));
      installed.hooks.PostToolUse[1].hooks.push({
        type: "command",
        command: "lifeline hook track",
      });
      await Deno.writeTextFile(path, JSON.stringify(installed));
      const before = await Deno.readTextFile(path);

      const removed = await lifeline(dir, "init", "--remove", "--scope", "project", "--json");
      assert.equal(removed.code, 0, removed.stderr);
      const out = JSON.parse(removed.stdout);
      assert.equal(out.written, true);
      assert.equal(out.removed.length, 9);
      assert.ok(out.removed.includes("SessionStart: lifeline hook crash"));
      assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), USERS_OWN);
      assert.equal(await Deno.readTextFile(out.backup), before);

      const again = await lifeline(dir, "init", "--remove", "--scope", "project");
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /settings\.json has no lifeline hooks; nothing changed\.$/m);
      const backups = (await listDir(`${dir}/project/.claude`)).filter((n) => n.includes(".bak-"));
      assert.equal(backups.length, 2, "the second removal made no backup");
    });
  },
});

Deno.test({
  name: "init --remove of a file init created leaves an empty object; --dry-run writes nothing",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const path = `${dir}/home/.claude/settings.json`;
      assert.equal((await lifeline(dir, "init")).code, 0);
      const installed = await Deno.readTextFile(path);
      const dry = await lifeline(dir, "init", "--remove", "--dry-run");
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, /^- Stop: lifeline hook track$/m);
      assert.match(dry.stdout, /^Would write .*settings\.json:\n\{\}$/m);
      assert.equal(await Deno.readTextFile(path), installed);
      const removed = await lifeline(dir, "init", "--remove");
      assert.match(removed.stdout, /^Wrote .*settings\.json \(backup: .*\.bak-\d{8}T\d{6}Z\)\.$/m);
      assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), {});
    });
  },
});

Deno.test({
  name: "init --remove keeps a 0600 file 0600, backup too, and writes a link where it leads",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const path = `${dir}/home/.claude/settings.json`;
      await Deno.mkdir(`${dir}/dotfiles`);
      await Deno.mkdir(`${dir}/home/.claude`, { recursive: true });
      await Deno.writeTextFile(`${dir}/dotfiles/settings.json`, '{"env": {"TOKEN": "s"}}\n');
      await Deno.chmod(`${dir}/dotfiles/settings.json`, 0o600);
      await Deno.symlink(`${dir}/dotfiles/settings.json`, path);
      assert.equal((await lifeline(dir, "init")).code, 0);
      const removed = JSON.parse((await lifeline(dir, "init", "--remove", "--json")).stdout);
      assert.ok((await Deno.lstat(path)).isSymlink, "still a link");
      assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dir}/dotfiles/settings.json`)), {
        env: { TOKEN: "s" },
      });
      assert.equal((await Deno.stat(`${dir}/dotfiles/settings.json`)).mode! & 0o777, 0o600);
      assert.equal((await Deno.stat(removed.backup)).mode! & 0o777, 0o600);
    });
  },
});

Deno.test({
  name: "init --remove refuses a file that is not valid JSON, and leaves it as it is",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const path = `${dir}/home/.claude/settings.json`;
      await Deno.mkdir(`${dir}/home/.claude`, { recursive: true });
      await Deno.writeTextFile(path, '{"hooks": {},}\n');
      const result = await lifeline(dir, "init", "--remove");
      assert.equal(result.code, 1);
      assert.match(result.stderr, /is not valid JSON at line 1, column 14/);
      assert.match(result.stderr, /then run the command again/);
      assert.equal(await Deno.readTextFile(path), '{"hooks": {},}\n');
      assert.deepEqual(await listDir(`${dir}/home/.claude`), ["settings.json"], "no backup");
    });
  },
});
