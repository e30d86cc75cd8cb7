// The hooks run on every tool call, so their hot path is guarded by its structure, not by timings
// (a shared machine is too noisy for those; `deno task bench` reports them): the work it must not
// do is watched from inside the process.
import assert from "node:assert/strict";
import { hookCases } from "../bench/hook_cases.ts";
import { childEnv, lifelinePermissionFlags, ownLogLines, REPO_DIR } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

/** A module of the graph `deno info` sees, by its path in the repository, and its code imports. */
type Graph = Map<string, { path: string; dynamic: boolean }[]>;

async function moduleGraph(entry: string): Promise<Graph> {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: REPO_DIR,
    stderr: "inherit",
  }).output();
  assert.ok(info.success, `deno info ${entry}`);
  const { modules } = JSON.parse(new TextDecoder().decode(info.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
    }[];
  };
  const local = (specifier: string) => specifier.replace(`file://${REPO_DIR}/`, "");
  return new Map(modules.map((m) => [
    local(m.specifier),
    (m.dependencies ?? []).flatMap((d) =>
      d.code ? [{ path: local(d.code.specifier), dynamic: d.isDynamic === true }] : []
    ),
  ]));
}

/**
 * The modules reached from `entry` through code imports: those evaluated when it loads (static
 * imports), or, with `dynamic`, also those `deno run` reads before it runs (it follows every
 * `import("…")` whose specifier is a literal).
 */
function reached(graph: Graph, entry: string, { dynamic }: { dynamic: boolean }): Set<string> {
  const seen = new Set([entry]);
  for (const path of seen) {
    for (const dep of graph.get(path) ?? []) if (dynamic || !dep.dynamic) seen.add(dep.path);
  }
  return seen;
}

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

Deno.test("the benchmarked hook calls load no zod and start no ICU time zone", async (t) => {
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
        assert.deepEqual(seen, { dateTimeFormats: 0, zod: false });
      });
    }
  });
});

Deno.test("before a command runs, deno run reads only main.ts, the command table and lib/core", async () => {
  const read = reached(await moduleGraph("main.ts"), "main.ts", { dynamic: true });
  const beyond = [...read].filter((path) =>
    !["main.ts", "deno.json", "commands/mod.ts", "lib/claude/hook_names.ts"].includes(path) &&
    !path.startsWith("lib/core/")
  );
  assert.deepEqual(beyond, []);
});
