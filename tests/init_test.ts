import assert from "node:assert/strict";
import { compiledLifeline, runLifeline } from "./helpers/lifeline.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

/** `lifeline init <args>` in `<dir>/project`, with a `lifeline` on PATH. */
async function runInit(dir: string, args: string[]) {
  return await runLifeline(["init", ...args], {
    env: { HOME: `${dir}/home`, PATH: `${dir}/bin:/usr/bin:/bin` },
    cwd: `${dir}/project`,
  });
}

/** `lifeline init --json <args>`. */
const init = (dir: string, ...args: string[]) => runInit(dir, ["--json", ...args]);

async function setUp(dir: string): Promise<string> {
  await Deno.mkdir(`${dir}/project/.claude`, { recursive: true });
  await Deno.mkdir(`${dir}/home/.claude`, { recursive: true });
  // A `lifeline` on PATH, so the hooks call it by name.
  await Deno.mkdir(`${dir}/bin`);
  await Deno.writeTextFile(`${dir}/bin/lifeline`, "#!/bin/sh\n");
  await Deno.chmod(`${dir}/bin/lifeline`, 0o755);
  return `${dir}/home/.claude/settings.json`;
}

const EXPECTED_HOOKS = {
  SessionStart: [{ hooks: [{ type: "command", command: "lifeline hook crash" }] }],
  UserPromptSubmit: [{ hooks: [{ type: "command", command: "lifeline hook remind" }] }],
  PostToolUse: [{
    matcher: "*",
    hooks: [
      { type: "command", command: "lifeline hook heartbeat", async: true },
      { type: "command", command: "lifeline hook track" },
    ],
  }],
  PostToolUseFailure: [{
    matcher: "*",
    hooks: [{ type: "command", command: "lifeline hook track" }],
  }],
  StopFailure: [{ hooks: [{ type: "command", command: "lifeline hook track" }] }],
  Stop: [{ hooks: [{ type: "command", command: "lifeline hook track" }] }],
  SessionEnd: [{ hooks: [{ type: "command", command: "lifeline hook heartbeat" }] }],
};

Deno.test({
  name: "init into an empty (missing) file writes the recommended hooks",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      const result = await init(dir);
      assert.equal(result.code, 0, result.stderr);
      const out = JSON.parse(result.stdout);
      assert.equal(out.path, path);
      assert.equal(out.added.length, 8);
      assert.equal(out.backup, null);
      assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), { hooks: EXPECTED_HOOKS });
    });
  },
});

Deno.test({
  name: "init keeps unrelated keys and hooks, backs the file up, and is idempotent",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      const original = {
        model: "sonnet",
        permissions: { allow: ["Bash(git *)"] },
        hooks: {
          PostToolUse: [{
            matcher: "Edit|Write",
            hooks: [{ type: "command", command: "prettier --write" }],
          }],
          Notification: [{ hooks: [{ type: "command", command: "notify-send hi" }] }],
        },
      };
      const text = JSON.stringify(original, null, 4);
      await Deno.writeTextFile(path, text);
      const first = JSON.parse((await init(dir)).stdout);
      assert.match(first.backup, /settings\.json\.bak-\d{8}T\d{6}Z$/);
      assert.equal(
        await Deno.readTextFile(first.backup),
        text,
        "the backup is the original, byte for byte",
      );
      const merged = JSON.parse(await Deno.readTextFile(path));
      assert.equal(merged.model, "sonnet");
      assert.deepEqual(merged.permissions, original.permissions);
      assert.deepEqual(merged.hooks.Notification, original.hooks.Notification);
      assert.deepEqual(merged.hooks.PostToolUse[0], original.hooks.PostToolUse[0]);
      assert.deepEqual(merged.hooks.PostToolUse[1], EXPECTED_HOOKS.PostToolUse[0]);

      const after = await Deno.readTextFile(path);
      const second = JSON.parse((await init(dir)).stdout);
      assert.deepEqual([second.added, second.updated, second.written, second.backup], [
        [],
        [],
        false,
        null,
      ]);
      assert.equal(second.unchanged.length, 8);
      assert.equal(await Deno.readTextFile(path), after, "nothing written");
      const backups = (await listDir(`${dir}/home/.claude`)).filter((n) => n.includes(".bak-"));
      assert.equal(backups.length, 1);
    });
  },
});

Deno.test({
  name: "a backup never replaces an earlier one made in the same second",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      await Deno.writeTextFile(path, '{"model": "opus"}\n');
      // Backups already taken in each of the next few seconds, whenever this test runs.
      const stamp = (ms: number) =>
        new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
      const taken = Array.from(
        { length: 6 },
        (_, s) => `${path}.bak-${stamp(Date.now() + s * 1000)}`,
      );
      for (const name of taken) await Deno.writeTextFile(name, "an earlier backup\n");
      const out = JSON.parse((await init(dir)).stdout);
      assert.match(out.backup, /settings\.json\.bak-\d{8}T\d{6}Z-2$/);
      assert.equal(await Deno.readTextFile(out.backup), '{"model": "opus"}\n');
      for (const name of taken) assert.equal(await Deno.readTextFile(name), "an earlier backup\n");
    });
  },
});

Deno.test({
  name: "older lifeline entries whose binary is gone are pointed at this one, in place",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      await Deno.writeTextFile(
        path,
        JSON.stringify({
          hooks: {
            PostToolUse: [{
              matcher: "*",
              hooks: [
                { type: "command", command: "/opt/old/lifeline hook heartbeat" },
                { type: "command", command: "/opt/old/lifeline hook track", timeout: 30 },
                { type: "command", command: "other-tool" },
              ],
            }],
            SessionStart: [{
              hooks: [{ type: "command", command: '"/Users/me/bin/lifeline" hook crash' }],
            }],
          },
        }),
      );
      const out = JSON.parse((await init(dir)).stdout);
      assert.deepEqual(out.updated.sort(), [
        "PostToolUse: lifeline hook heartbeat",
        "PostToolUse: lifeline hook track",
        "SessionStart: lifeline hook crash",
      ]);
      const hooks = JSON.parse(await Deno.readTextFile(path)).hooks;
      assert.deepEqual(hooks.PostToolUse, [{
        matcher: "*",
        hooks: [
          // As the user wrote it, but for the path: no "async" added.
          { type: "command", command: "lifeline hook heartbeat" },
          { type: "command", command: "lifeline hook track", timeout: 30 },
          { type: "command", command: "other-tool" },
        ],
      }]);
      assert.deepEqual(hooks.SessionStart, EXPECTED_HOOKS.SessionStart);
    });
  },
});

Deno.test({
  name: "an invalid file is refused with its line and column, and left untouched",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      const broken = '{\n  "model": "opus",\n  "hooks": {},\n}\n';
      await Deno.writeTextFile(path, broken);
      const result = await init(dir);
      assert.equal(result.code, 1);
      assert.match(result.stderr, /is not valid JSON at line 4, column 1/);
      assert.equal(await Deno.readTextFile(path), broken);
      assert.deepEqual(
        (await listDir(`${dir}/home/.claude`)).filter((n) => n.includes(".bak-")),
        [],
      );
    });
  },
});

Deno.test({
  name: "--dry-run writes nothing; --scope project|local and --settings choose the file",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      await setUp(dir);
      const dry = await runLifeline(["init", "--dry-run", "--scope", "project"], {
        env: { HOME: `${dir}/home`, PATH: `${dir}/bin:/usr/bin:/bin` },
        cwd: `${dir}/project`,
      });
      assert.equal(dry.code, 0);
      assert.match(dry.stdout, /Would write .*\/project\/\.claude\/settings\.json:/);
      assert.deepEqual(await listDir(`${dir}/project/.claude`), []);
      const local = JSON.parse((await init(dir, "--scope", "local")).stdout);
      assert.equal(local.path, `${dir}/project/.claude/settings.local.json`);
      const explicit = JSON.parse((await init(dir, "--settings", "custom.json")).stdout);
      assert.equal(explicit.path, `${dir}/project/custom.json`);
      const bad = await init(dir, "--scope", "galaxy");
      assert.equal(bad.code, 64);
    });
  },
});

Deno.test({
  name: "without lifeline on PATH, the hooks call the running program by its absolute path",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      await Deno.remove(`${dir}/bin/lifeline`);
      await init(dir);
      const command = JSON.parse(await Deno.readTextFile(path)).hooks.Stop[0].hooks[0]
        .command as string;
      const binary = compiledLifeline();
      if (binary !== undefined) {
        assert.equal(command, `${binary} hook track`, "a compiled binary names itself");
      } else {
        assert.ok(command.startsWith(Deno.execPath()), command);
        assert.match(command, /main\.ts hook track$/);
      }
    });
  },
});

Deno.test({
  name: "a settings.json that is a link (dotfiles) is written where it leads; the link stays",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      await Deno.mkdir(`${dir}/dotfiles`);
      await Deno.writeTextFile(`${dir}/dotfiles/settings.json`, '{"model": "opus"}\n');
      await Deno.symlink(`${dir}/dotfiles/settings.json`, path);
      const result = await init(dir);
      assert.equal(result.code, 0, result.stderr);
      assert.ok((await Deno.lstat(path)).isSymlink, "still a link");
      const target = JSON.parse(await Deno.readTextFile(`${dir}/dotfiles/settings.json`));
      assert.equal(target.model, "opus");
      assert.deepEqual(target.hooks, EXPECTED_HOOKS);
      assert.deepEqual(await listDir(`${dir}/dotfiles`), ["settings.json"], "no temp file left");
      const backup = JSON.parse(result.stdout).backup;
      assert.equal(await Deno.readTextFile(backup), '{"model": "opus"}\n');
    });
  },
});

Deno.test({
  name: "a 0600 settings file stays 0600, and so does its backup",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      await Deno.writeTextFile(path, '{"env": {"API_TOKEN": "secret"}}\n');
      await Deno.chmod(path, 0o600);
      const result = await init(dir);
      assert.equal(result.code, 0, result.stderr);
      assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
      assert.equal((await Deno.stat(JSON.parse(result.stdout).backup)).mode! & 0o777, 0o600);
    });
  },
});

Deno.test({
  name: "a hooks shape init does not understand is refused, and the user's hook is kept",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      const text = JSON.stringify({
        hooks: { PostToolUse: { matcher: "*", hooks: [{ type: "command", command: "audit" }] } },
      });
      await Deno.writeTextFile(path, text);
      const result = await runInit(dir, []);
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        /^error: .*settings\.json: "hooks\.PostToolUse" is not a list of matcher groups; left the file unchanged\nhint: write it as a list/,
      );
      assert.equal(await Deno.readTextFile(path), text);
      assert.deepEqual(await listDir(`${dir}/home/.claude`), ["settings.json"], "no backup");
    });
  },
});

Deno.test({
  name: "a settings file that starts with a byte-order mark is read, and written back as JSON",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      await Deno.writeTextFile(path, '\uFEFF{\n  "model": "opus"\n}\n');
      const result = await init(dir);
      assert.equal(result.code, 0, result.stderr);
      const written = JSON.parse(await Deno.readTextFile(path));
      assert.equal(written.model, "opus");
      assert.deepEqual(written.hooks, EXPECTED_HOOKS);
    });
  },
});

Deno.test({
  name: "a settings file of [] is not an object, and gets no trailing-comma hint",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = await setUp(dir);
      await Deno.writeTextFile(path, "[]\n");
      const result = await runInit(dir, []);
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        /settings\.json holds an array, not a JSON object; left it unchanged/,
      );
      assert.doesNotMatch(result.stderr, /trailing comma/);
      assert.equal(await Deno.readTextFile(path), "[]\n");
    });
  },
});

Deno.test({
  name: "init leaves the user's own lifeline entries and every other byte as they were",
  ignore: Deno.build.os === "windows",
  async fn(t) {
    await t.step("custom commands: wrappers, flags, environment, redirections", async () => {
      await withTempDir(async (dir) => {
        const path = await setUp(dir);
        const track = "timeout 20 lifeline hook track --root /home/me/proj 2>>/tmp/ll.err";
        const crash = `LIFELINE_ROOT=/srv/app ${dir}/bin/lifeline hook crash --background`;
        await Deno.writeTextFile(
          path,
          JSON.stringify({
            hooks: {
              PostToolUse: [{ matcher: "*", hooks: [{ type: "command", command: track }] }],
              SessionStart: [{ hooks: [{ type: "command", command: crash }] }],
            },
          }),
        );
        const out = JSON.parse((await init(dir)).stdout);
        assert.deepEqual(out.updated, []);
        const hooks = JSON.parse(await Deno.readTextFile(path)).hooks;
        assert.equal(hooks.PostToolUse[0].hooks[0].command, track);
        assert.equal(hooks.SessionStart[0].hooks[0].command, crash);
      });
    });
    await t.step("a lifeline path that is gone: that word alone is replaced", async () => {
      await withTempDir(async (dir) => {
        const path = await setUp(dir);
        const command = "LIFELINE_ROOT=/srv/app /opt/gone/lifeline hook crash --background 2>>x";
        await Deno.writeTextFile(
          path,
          JSON.stringify({ hooks: { SessionStart: [{ hooks: [{ type: "command", command }] }] } }),
        );
        const out = JSON.parse((await init(dir)).stdout);
        assert.deepEqual(out.updated, ["SessionStart: lifeline hook crash"]);
        const hooks = JSON.parse(await Deno.readTextFile(path)).hooks;
        assert.equal(
          hooks.SessionStart[0].hooks[0].command,
          "LIFELINE_ROOT=/srv/app lifeline hook crash --background 2>>x",
        );
      });
    });
    await t.step("numbers, duplicate keys, escapes and spacing outside the hooks", async () => {
      await withTempDir(async (dir) => {
        const path = await setUp(dir);
        const head = '{\n    "n": 12345678901234567890,\n    "f": 1.50,\n    "u": "\\u00e9",\n' +
          '    "x": 1e2,\n    "env": {"A": "1"},\n    "env": {"A": "2"},\n';
        await Deno.writeTextFile(path, `${head}    "hooks": {}\n}\n`);
        await init(dir);
        const written = await Deno.readTextFile(path);
        assert.ok(written.startsWith(head), written);
        assert.deepEqual(JSON.parse(written).hooks, EXPECTED_HOOKS);
        assert.match(
          written,
          /\n {4}"hooks": \{\n {8}"SessionStart": \[/,
          "indented like the file",
        );
        const removed = JSON.parse((await init(dir, "--remove")).stdout);
        assert.equal(removed.removed.length, 8);
        assert.equal(await Deno.readTextFile(path), `${head.replace(/,\n$/, "\n")}}\n`);
      });
    });
    await t.step({
      name: "a file of another user keeps its owner, and so does its backup (init as root)",
      ignore: Deno.uid() !== 0,
      fn: async () => {
        await withTempDir(async (dir) => {
          const path = await setUp(dir);
          await Deno.writeTextFile(path, '{"model": "opus"}\n');
          await Deno.chown(path, 1000, 1000);
          await Deno.chmod(path, 0o600);
          const out = JSON.parse((await init(dir)).stdout);
          for (const file of [path, out.backup]) {
            const info = await Deno.stat(file);
            assert.deepEqual([info.uid, info.gid, info.mode! & 0o777], [1000, 1000, 0o600], file);
          }
        });
      },
    });
  },
});
