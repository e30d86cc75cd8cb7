import assert from "node:assert/strict";
import manifest from "../deno.json" with { type: "json" };
import { COMMANDS } from "../commands/mod.ts";
import { runLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

Deno.test("lifeline --version prints the version from deno.json", async () => {
  const result = await runLifeline(["--version"]);
  assert.equal(result.code, 0);
  assert.equal(result.stdout, `lifeline ${manifest.version}\n`);
});

Deno.test("lifeline --help lists every command with its summary", async () => {
  const result = await runLifeline(["--help"]);
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^Usage: lifeline <command>/);
  for (const command of COMMANDS) {
    assert.ok(result.stdout.includes(command.name), command.name);
    assert.ok(result.stdout.includes(command.summary), command.summary);
  }
});

Deno.test("every command answers --help with its own usage", async () => {
  for (const command of COMMANDS) {
    const result = await runLifeline([...command.name.split(" "), "--help"]);
    assert.equal(result.code, 0, command.name);
    assert.ok(
      result.stdout.startsWith(`Usage: lifeline ${command.name}`),
      `${command.name}: ${result.stdout.split("\n")[0]}`,
    );
  }
});

Deno.test("no command, an unknown command or an unknown flag exits 64 with usage and error", async () => {
  await withTempDir(async (home) => {
    const env = { HOME: home };
    const none = await runLifeline([], { env });
    assert.equal(none.code, 64);
    assert.match(none.stderr, /Usage: lifeline/);
    assert.match(none.stderr, /error: missing command/);

    const unknown = await runLifeline(["frobnicate"], { env });
    assert.equal(unknown.code, 64);
    assert.match(unknown.stderr, /^Usage: lifeline <command>/);
    assert.match(unknown.stderr, /error: unknown command "frobnicate"/);

    const flag = await runLifeline(["selfheal", "status", "--bogus"], { env });
    assert.equal(flag.code, 64);
    assert.match(flag.stderr, /^Usage: lifeline selfheal/);
    assert.match(flag.stderr, /error: Unknown option '--bogus'/);

    const hookFlag = await runLifeline(["hook", "remind", "--bogus"], { env, stdin: "{}" });
    assert.equal(hookFlag.code, 64);
    assert.equal(hookFlag.stdout, "");

    const group = await runLifeline(["hook"], { env });
    assert.equal(group.code, 64);
    assert.match(group.stderr, /Usage: lifeline hook </);
  });
});

Deno.test("an unknown hook name exits 1 with one line, never 2", async () => {
  const result = await runLifeline(["hook", "bogus"], { stdin: "{}" });
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.equal(result.stderr.trimEnd().split("\n").length, 1);
  assert.match(result.stderr, /unknown command "hook bogus"/);
});
