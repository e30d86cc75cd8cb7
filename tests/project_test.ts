// Checks on the project itself: the release build, the tasks and `init` agree on permissions,
// and the vendored zod bundle matches its source.
import assert from "node:assert/strict";
import manifest from "../deno.json" with { type: "json" };
import { SOURCE_RUN_FLAGS } from "../lib/host/self.ts";
import { buildBundle } from "../tools/vendor_zod.ts";
import { lifelinePermissionFlags, REPO_DIR } from "./helpers/lifeline.ts";

function allowFlags(commandLine: string): string[] {
  return commandLine.split(/\s+/).filter((word) =>
    word.startsWith("--allow-") || word.startsWith("--v8-flags=")
  );
}

Deno.test("the compile and install tasks and the release workflow use the lifeline task's runtime flags, and compile bundles every command", async () => {
  const flags = lifelinePermissionFlags();
  assert.ok(flags.length > 0);
  assert.deepEqual(allowFlags(manifest.tasks.compile), flags);
  assert.deepEqual(allowFlags(manifest.tasks.install), flags);
  assert.deepEqual(SOURCE_RUN_FLAGS, flags, "init's hooks for a source checkout");
  const release = await Deno.readTextFile(`${REPO_DIR}/.github/workflows/release.yml`);
  const compile = /deno compile[^\n]*\n(?:[^\n]*--[^\n]*\n)*/.exec(release);
  assert.ok(compile, "release.yml runs deno compile");
  assert.deepEqual(allowFlags(compile[0]), flags);
  assert.match(compile[0], /--frozen/);
  // commands/mod.ts imports the commands by computed specifiers, which deno compile cannot see.
  for (const commandLine of [manifest.tasks.compile, compile[0]]) {
    assert.match(commandLine, /--include commands\s/, commandLine);
  }
});

Deno.test({
  name: "the vendored zod bundle is what `deno task vendor` builds from lib/vendor/zod_mini.ts",
  // Line endings differ on Windows checkouts; one platform suffices to catch a stale bundle.
  ignore: Deno.build.os === "windows",
  async fn() {
    const committed = await Deno.readTextFile(`${REPO_DIR}/lib/vendor/zod_mini.js`);
    assert.ok(committed === await buildBundle(), "stale: run `deno task vendor`");
  },
});

Deno.test("no source file exits with code 2 (Claude Code reads it as 'block the agent')", async () => {
  const offenders: string[] = [];
  for (const dir of ["", "commands", "lib"]) {
    for await (const entry of Deno.readDir(`${REPO_DIR}/${dir}`)) {
      if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
      const text = await Deno.readTextFile(`${REPO_DIR}/${dir}/${entry.name}`);
      if (/Deno\.exit\(\s*2\s*\)|return\s+2\s*;|exitCode\s*=\s*2\b/.test(text)) {
        offenders.push(`${dir}/${entry.name}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});
