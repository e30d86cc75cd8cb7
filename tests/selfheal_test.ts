import assert from "node:assert/strict";
import { runLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

Deno.test("selfheal off creates the kill switch in ~/.claude, on removes it, both idempotent", async () => {
  await withTempDir(async (home) => {
    const env = { HOME: home };
    const path = `${home}/.claude/self-heal.off`;

    const status = await runLifeline(["selfheal", "status", "--json"], { env });
    assert.deepEqual(JSON.parse(status.stdout), { state: "on", path, changed: false });

    const off = await runLifeline(["selfheal", "off"], { env });
    assert.equal(off.code, 0);
    assert.equal(off.stdout, `self-heal is off: created ${path}\n`);
    assert.ok((await Deno.stat(path)).isFile);

    const offAgain = await runLifeline(["selfheal", "off", "--json"], { env });
    assert.deepEqual(JSON.parse(offAgain.stdout), { state: "off", path, changed: false });

    const statusOff = await runLifeline(["selfheal", "status"], { env });
    assert.match(statusOff.stdout, /^self-heal is off: .*self-heal\.off exists/);

    const on = await runLifeline(["selfheal", "on", "--json"], { env });
    assert.deepEqual(JSON.parse(on.stdout), { state: "on", path, changed: true });
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);

    const onAgain = await runLifeline(["selfheal", "on"], { env });
    assert.equal(onAgain.stdout, `self-heal was already on (${path})\n`);
  });
});

Deno.test("selfheal uses $CLAUDE_CONFIG_DIR when it is set", async () => {
  await withTempDir(async (dir) => {
    const env = { HOME: `${dir}/home`, CLAUDE_CONFIG_DIR: `${dir}/claude-config` };
    const off = await runLifeline(["selfheal", "off", "--json"], { env });
    assert.equal(JSON.parse(off.stdout).path, `${dir}/claude-config/self-heal.off`);
    assert.ok((await Deno.stat(`${dir}/claude-config/self-heal.off`)).isFile);
    await assert.rejects(Deno.stat(`${dir}/home/.claude/self-heal.off`), Deno.errors.NotFound);
  });
});

Deno.test("selfheal rejects a missing or unknown action with exit 64", async () => {
  for (const args of [["selfheal"], ["selfheal", "maybe"], ["selfheal", "on", "off"]]) {
    const result = await runLifeline(args, { env: { HOME: "/nonexistent" } });
    assert.equal(result.code, 64, args.join(" "));
    assert.match(result.stderr, /^Usage: lifeline selfheal <on\|off\|status>/);
    assert.match(result.stderr, /error: /);
  }
});

Deno.test("selfheal reports a switch it cannot create as an error with a hint, exit 1", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/not-a-dir`, "");
    const result = await runLifeline(["selfheal", "off"], {
      env: { HOME: dir, CLAUDE_CONFIG_DIR: `${dir}/not-a-dir/claude` },
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^error: Cannot turn self-heal off: /);
    assert.match(result.stderr, /hint: check that .* can be created/);
  });
});
