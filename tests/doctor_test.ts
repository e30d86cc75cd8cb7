import assert from "node:assert/strict";
import { runLifeline, spawnLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

interface Check {
  name: string;
  status: string;
  message: string;
  fix?: string;
}

/** A healthy setup: lifeline on PATH and wired by `lifeline init`. */
async function healthy(dir: string): Promise<Record<string, string>> {
  await Deno.mkdir(`${dir}/project`, { recursive: true });
  await Deno.mkdir(`${dir}/bin`);
  await Deno.writeTextFile(`${dir}/bin/lifeline`, "#!/bin/sh\n");
  await Deno.chmod(`${dir}/bin/lifeline`, 0o755);
  const env = { HOME: `${dir}/home`, PATH: `${dir}/bin:${Deno.env.get("PATH")}` };
  const init = await runLifeline(["init"], { env, cwd: `${dir}/project` });
  assert.equal(init.code, 0, init.stderr);
  return env;
}

async function doctor(
  dir: string,
  env: Record<string, string>,
): Promise<{ code: number; checks: Check[] }> {
  const result = await runLifeline(["doctor", "--json"], { env, cwd: `${dir}/project` });
  const out = JSON.parse(result.stdout);
  return { code: result.code, checks: out.checks };
}

const find = (checks: Check[], name: string, status: string) =>
  checks.filter((c) => c.name === name && c.status === status);

Deno.test({
  name: "doctor: a healthy setup has no failing check and exits 0",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      const { code, checks } = await doctor(dir, env);
      assert.equal(code, 0);
      assert.deepEqual(checks.filter((c) => c.status === "fail"), []);
      assert.equal(find(checks, "hooks", "ok").length, 8);
      assert.match(find(checks, "binary", "ok")[0]!.message, /lifeline is on PATH/);
      assert.match(find(checks, "tmux", "ok")[0]?.message ?? "", /^tmux \d/);
      assert.match(find(checks, "self-heal", "ok")[0]!.message, /self-heal is on/);
      const human = await runLifeline(["doctor"], { env, cwd: `${dir}/project` });
      assert.match(human.stdout, /^ok {4}settings/m);
      assert.match(human.stdout, /No check failed\.$/m);
    });
  },
});

Deno.test({
  name: "doctor: a settings file that does not parse fails with its line and column",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      await Deno.mkdir(`${dir}/project/.claude`);
      await Deno.writeTextFile(
        `${dir}/project/.claude/settings.json`,
        '{\n  "hooks": {\n    "Stop": [],\n  }\n}\n',
      );
      const { code, checks } = await doctor(dir, env);
      assert.equal(code, 1);
      const fail = find(checks, "settings", "fail")[0]!;
      assert.match(fail.message, /project: .*settings\.json is not valid JSON at line 4, column 3/);
      assert.match(fail.fix!, /fix line 4/);
    });
  },
});

Deno.test({
  name: "doctor: a hook command that does not exist fails",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      await Deno.remove(`${dir}/bin/lifeline`);
      const { code, checks } = await doctor(dir, env);
      assert.equal(code, 1);
      assert.match(find(checks, "hooks", "fail")[0]!.message, /"lifeline" does not exist/);
      assert.equal(
        find(checks, "binary", "fail").length,
        1,
        "hooks call it by name, and it is not on PATH",
      );
    });
  },
});

Deno.test({
  name: "doctor: an invalid matcher regex fails; mcp__server without __.* warns",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      await Deno.mkdir(`${dir}/project/.claude`);
      await Deno.writeTextFile(
        `${dir}/project/.claude/settings.local.json`,
        JSON.stringify({
          hooks: {
            PreToolUse: [
              { matcher: "Bash(", hooks: [{ type: "command", command: "true" }] },
              { matcher: "mcp__memory", hooks: [{ type: "command", command: "true" }] },
              { matcher: "mcp__memory__.*", hooks: [{ type: "command", command: "true" }] },
            ],
          },
        }),
      );
      const { code, checks } = await doctor(dir, env);
      assert.equal(code, 1);
      assert.match(find(checks, "matchers", "fail")[0]!.message, /"Bash\(" is not a valid regex/);
      const warn = find(checks, "matchers", "warn");
      assert.equal(warn.length, 1);
      assert.match(warn[0]!.message, /"mcp__memory" matches no tool; .*use "mcp__memory__\.\*"/);
    });
  },
});

Deno.test({
  name: "doctor: an unwritable state directory fails",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      await Deno.writeTextFile(`${dir}/state-file`, "");
      const { code, checks } = await doctor(dir, {
        ...env,
        LIFELINE_STATE_DIR: `${dir}/state-file/lifeline`,
      });
      assert.equal(code, 1);
      assert.match(
        find(checks, "state", "fail")[0]!.message,
        /lifeline's own state is not writable/,
      );
    });
  },
});

Deno.test({
  name: "doctor: an invalid config fails, naming the file and the field",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      await Deno.mkdir(`${dir}/project/.lifeline`);
      await Deno.writeTextFile(
        `${dir}/project/.lifeline/config.json`,
        '{"watch": {"interval": 5}}',
      );
      const { code, checks } = await doctor(dir, env);
      assert.equal(code, 1);
      assert.match(
        find(checks, "config", "fail")[0]!.message,
        /config\.json": watch\.interval: unknown key "interval"/,
      );
    });
  },
});

Deno.test({
  name: "doctor: a state file that does not parse fails, naming it",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      await Deno.mkdir(`${dir}/project/sessions/s1`, { recursive: true });
      await Deno.writeTextFile(`${dir}/project/sessions/s1/session.json`, '{"session_id": "s1",');
      const { code, checks } = await doctor(dir, env);
      assert.equal(code, 1);
      assert.match(find(checks, "corrupt", "fail")[0]!.message, /sessions\/s1\/session\.json/);
    });
  },
});

Deno.test({
  name: "doctor: quarantined files and stale claims warn; the kill switch is reported",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      await Deno.mkdir(`${dir}/project/sessions/s1`, { recursive: true });
      await Deno.writeTextFile(
        `${dir}/project/sessions/s1/session.json.corrupt-2026-11-30T000000000Z`,
        '{"session_id": "s1",',
      );
      await Deno.mkdir(`${dir}/project/.claims`);
      await Deno.writeTextFile(`${dir}/project/.claims/db.lock`, "123");
      const old = new Date(Date.now() - 3600_000);
      await Deno.utime(`${dir}/project/.claims/db.lock`, old, old);
      await runLifeline(["selfheal", "off"], { env });
      const { code, checks } = await doctor(dir, env);
      assert.equal(code, 0);
      assert.match(
        find(checks, "corrupt", "warn")[0]!.message,
        /quarantined files .*session\.json\.corrupt-/,
      );
      assert.match(find(checks, "claims", "warn")[0]!.message, /\.claims\/db\.lock/);
      assert.match(find(checks, "self-heal", "ok")[0]!.message, /self-heal is off/);
    });
  },
});

Deno.test({
  name: "doctor: hooks that call lifeline by name fail when it is not on PATH; no tmux warns",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      // The same setup, seen from a PATH that has neither lifeline nor tmux.
      await Deno.mkdir(`${dir}/empty-bin`);
      const bare = { ...env, PATH: `${dir}/empty-bin` };
      const { code, checks } = await doctor(dir, bare);
      assert.equal(code, 1);
      const binary = find(checks, "binary", "fail")[0]!;
      assert.equal(binary.message, "lifeline is not on PATH");
      assert.match(binary.fix!, /PATH directory/);
      assert.equal(find(checks, "hooks", "fail").length, 8, "every hook names a missing command");
      assert.match(find(checks, "tmux", "warn")[0]!.message, /tmux is not installed/);
    });
  },
});

Deno.test({
  name: "doctor: a running daemon is seen through its lock",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const env = await healthy(dir);
      const before = await doctor(dir, env);
      assert.match(
        find(before.checks, "watchers", "warn").map((c) => c.message).join(),
        /no stale-session daemon/,
      );
      const daemon = spawnLifeline(["daemon", "stale", "--root", `${dir}/project`], { env });
      try {
        await new Promise((r) => setTimeout(r, 1500));
        const during = await doctor(dir, env);
        assert.match(
          find(during.checks, "watchers", "ok").map((c) => c.message).join(),
          new RegExp(`stale-session daemon running: pid ${daemon.pid}`),
        );
      } finally {
        daemon.kill("SIGTERM");
        await daemon.status;
        await daemon.stdout.cancel();
        await daemon.stderr.cancel();
      }
    });
  },
});
