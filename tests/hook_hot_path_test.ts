// The hooks run on every tool call, so their hot path is guarded by its structure, not by timings
// (a shared machine is too noisy for those; `deno task bench` reports them): the work it must not
// do is watched from inside the process.
import assert from "node:assert/strict";
import { hookCases } from "../bench/hook_cases.ts";
import { childEnv, lifelinePermissionFlags, ownLogLines, REPO_DIR } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

/** What the probe saw while `lifeline <args>` ran on `stdin` (from source, with `deno run`). */
async function probe(
  args: string[],
  stdin: string,
  { dir, home }: { dir: string; home: string },
): Promise<{ dateTimeFormats: number; zod: boolean }> {
  const out = `${dir}/probe.json`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      ...lifelinePermissionFlags(),
      "--preload",
      `${REPO_DIR}/tests/helpers/hot_path_probe.ts`,
      `${REPO_DIR}/main.ts`,
      ...args,
    ],
    stdin: "piped",
    stdout: "null",
    stderr: "piped",
    clearEnv: true,
    env: childEnv({ HOME: home, LIFELINE_PROBE_OUT: out }),
    cwd: dir,
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const result = await child.output();
  assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
  return JSON.parse(await Deno.readTextFile(out));
}

Deno.test("the benchmarked hook calls start no ICU time zone (Intl.DateTimeFormat)", async (t) => {
  await withTempDir(async (dir) => {
    const project = `${dir}/project`;
    const home = `${dir}/home`;
    await Deno.mkdir(project);
    for (const hook of await hookCases(project)) {
      await hook.prepare?.();
      await t.step(hook.name, async () => {
        const seen = await probe(hook.args, hook.stdin, { dir, home });
        // A hook that failed open early would pass for the wrong reason.
        assert.deepEqual(await ownLogLines(home), []);
        assert.equal(seen.dateTimeFormats, 0);
      });
    }
  });
});
