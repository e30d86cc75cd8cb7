// LIFELINE_BIN: the spawning tests run against any lifeline program, the release workflow's
// compiled binaries in particular. Here the program is a script that records each call, then
// runs this checkout.
import assert from "node:assert/strict";
import { REPO_DIR } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

const HELPER = new URL("./helpers/lifeline.ts", import.meta.url).href;

Deno.test({
  name: "with LIFELINE_BIN set, the lifeline the tests start is that program, on PATH too",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      await Deno.writeTextFile(
        `${dir}/lifeline-under-test`,
        `#!/bin/sh\necho "$*" >> '${dir}/calls'\n` +
          `exec '${Deno.execPath()}' run --quiet --allow-all '${REPO_DIR}/main.ts' "$@"\n`,
        { mode: 0o755 },
      );
      const probe = `
        import { installLifelineWrapper, runLifeline } from "${HELPER}";
        const direct = await runLifeline(["--version"]);
        const wrapper = await installLifelineWrapper("${dir}/path");
        const onPath = await new Deno.Command(wrapper, { args: ["status", "--help"] }).output();
        console.log(JSON.stringify([direct.stdout, new TextDecoder().decode(onPath.stdout)]));`;
      // A relative path, as a user may give it; children run in other directories.
      const result = await new Deno.Command(Deno.execPath(), {
        args: ["eval", probe],
        cwd: dir,
        env: { LIFELINE_BIN: "./lifeline-under-test" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
      const [direct, onPath] = JSON.parse(new TextDecoder().decode(result.stdout));
      assert.match(direct, /^lifeline \d+\.\d+\.\d+\n$/);
      assert.match(onPath, /lifeline status/);
      assert.equal(await Deno.readTextFile(`${dir}/calls`), "--version\nstatus --help\n");
    });
  },
});
