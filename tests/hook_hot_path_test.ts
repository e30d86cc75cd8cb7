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

Deno.test("before a command runs, deno run reads only main.ts, the dispatcher and lib/core (not the command table)", async () => {
  const read = reached(await moduleGraph("main.ts"), "main.ts", { dynamic: true });
  const beyond = [...read].filter((path) =>
    !["main.ts", "deno.json", "commands/dispatch.ts", "lib/claude/hook_names.ts"].includes(path) &&
    !path.startsWith("lib/core/")
  );
  assert.deepEqual(beyond, []);
});

/**
 * How many modules `deno run` reads to run each hook: main.ts's graph (8 of them) and the hook's. A
 * budget, so that a new import on a hook's path is a decision, not an accident (each costs ~0.2 ms
 * on every tool call). None of them is zod.
 */
const HOOK_MODULE_BUDGET: Record<string, number> = {
  // 18: the heartbeat also records the project in the user's registry of roots (roots.ts), and
  // shares its sighting (sighting.ts) with hook crash.
  "commands/hook_heartbeat.ts": 18,
  "commands/hook_remind.ts": 17,
  "commands/hook_track.ts": 16,
  // 29: hook crash also records the starting session alive (sighting.ts, proc.ts), checks a
  // handoff against the daemon's own record of it (scavenges.ts) and bounds what it prints
  // (text.ts).
  "commands/hook_crash.ts": 29,
};

Deno.test("each hook's path reads few modules, and never zod", async (t) => {
  const main = reached(await moduleGraph("main.ts"), "main.ts", { dynamic: true });
  for (const [hook, budget] of Object.entries(HOOK_MODULE_BUDGET)) {
    await t.step(hook, async () => {
      const read = [...main, ...reached(await moduleGraph(hook), hook, { dynamic: true })];
      const modules = [...new Set(read)];
      assert.ok(!modules.includes("lib/vendor/zod_mini.js"), modules.join(" "));
      assert.ok(modules.length <= budget, `${modules.length} modules: ${modules.join(" ")}`);
    });
  }
});

/** The modules imported by `importLater`, by their path in the repository. */
async function laterImported(): Promise<Set<string>> {
  const found = new Set<string>();
  for (const dir of ["lib", "commands"]) {
    for await (const entry of Deno.readDir(`${REPO_DIR}/${dir}`)) {
      const paths = entry.isDirectory
        ? (await Array.fromAsync(Deno.readDir(`${REPO_DIR}/${dir}/${entry.name}`)))
          .map((inner) => `${dir}/${entry.name}/${inner.name}`)
        : [`${dir}/${entry.name}`];
      for (const path of paths.filter((p) => p.endsWith(".ts"))) {
        const text = await Deno.readTextFile(`${REPO_DIR}/${path}`);
        for (const [, specifier] of text.matchAll(/importLater<[^>]*>\(\s*"([^"]+)"/g)) {
          found.add(new URL(specifier!, `file:///${path}`).pathname.slice(1));
        }
      }
    }
  }
  return found;
}

Deno.test("commands/lazy_modules.ts names every module imported by importLater, for deno compile", async () => {
  const later = [...await laterImported()].filter((path) => !path.startsWith("commands/"));
  assert.ok(later.length > 5, later.join(" "));
  const named = reached(await moduleGraph("commands/lazy_modules.ts"), "commands/lazy_modules.ts", {
    dynamic: true,
  });
  assert.deepEqual(later.filter((path) => !named.has(path)), []);
});
