// Which project a command works on when run from a subdirectory without --root: the nearest
// directory with .claude/ up to the git top level, else the git top level, else the working
// directory; and every such command says which root it uses. Real directories, real git.
import assert from "node:assert/strict";
import { discoverRoot } from "../lib/state/project_root.ts";
import { git, makeRepo } from "./helpers/git_repo.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** Makes each directory (relative to `dir`); a name ending in `.git` is made by `git init`. */
async function tree(dir: string, paths: string[]): Promise<void> {
  for (const path of paths) {
    if (path.endsWith("/.git")) await git(dir, "init", "--quiet", path.slice(0, -"/.git".length));
    else await Deno.mkdir(`${dir}/${path}`, { recursive: true });
  }
}

Deno.test({
  name: "discoverRoot: the nearest .claude/ up to the git top level, else the git top, else cwd",
  ignore: IGNORE,
  async fn(t) {
    const rows: { name: string; dirs: string[]; cwd: string; root: string; source: string }[] = [
      {
        name: "a repository with .claude/ at its top, from deep inside",
        dirs: ["home/repo/.git", "home/repo/.claude", "home/repo/src/deep"],
        cwd: "home/repo/src/deep",
        root: "home/repo",
        source: "claude",
      },
      {
        name: "a package of a monorepo with its own .claude/",
        dirs: ["home/mono/.git", "home/mono/.claude", "home/mono/pkg/.claude", "home/mono/pkg/src"],
        cwd: "home/mono/pkg/src",
        root: "home/mono/pkg",
        source: "claude",
      },
      {
        name: "a repository without .claude/: its top level",
        dirs: ["home/plain/.git", "home/plain/lib"],
        cwd: "home/plain/lib",
        root: "home/plain",
        source: "git",
      },
      {
        name: "a .claude/ above the git top level does not count",
        dirs: ["home/work/.claude", "home/work/repo/.git", "home/work/repo/src"],
        cwd: "home/work/repo/src",
        root: "home/work/repo",
        source: "git",
      },
      {
        name: "no git: the nearest .claude/ below the home directory",
        dirs: ["home/notes/.claude", "home/notes/drafts"],
        cwd: "home/notes/drafts",
        root: "home/notes",
        source: "claude",
      },
      {
        name: "no git, no .claude/: the working directory",
        dirs: ["home/scratch/a"],
        cwd: "home/scratch/a",
        root: "home/scratch/a",
        source: "cwd",
      },
      {
        name: "a home kept in git, with ~/.claude: never climbed into",
        dirs: ["home/.git", "home/.claude", "home/loose/dir"],
        cwd: "home/loose/dir",
        root: "home/loose/dir",
        source: "cwd",
      },
    ];
    for (const row of rows) {
      await t.step(row.name, () =>
        withTempDir(async (dir) => {
          await tree(dir, row.dirs);
          const found = await discoverRoot(`${dir}/${row.cwd}`, { HOME: `${dir}/home` });
          assert.deepEqual(found, { root: `${dir}/${row.root}`, source: row.source });
        }));
    }
  },
});

Deno.test({
  name: "status, doctor, init, fail: from a subdirectory they use the project, and say so",
  ignore: IGNORE,
  async fn(t) {
    await withTempDir(async (dir) => {
      const project = await makeRepo(`${dir}/project`);
      await Deno.mkdir(`${project}/.claude`);
      const cwd = `${project}/src/deep`;
      await Deno.mkdir(cwd, { recursive: true });
      const env = { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` };
      const said = `project root: ${project} (the nearest directory with .claude/)`;
      const run = (args: string[]) => runInProcess(args, { cwd, env });

      await t.step("status", async () => {
        const text = await run(["status"]);
        assert.equal(
          text.stdout.split("\n")[0],
          `lifeline status for ${project} (the nearest directory with .claude/)`,
        );
        assert.equal(JSON.parse((await run(["status", "--json"])).stdout).root, project);
      });
      await t.step("doctor", async () => {
        const text = await run(["doctor"]);
        assert.equal(text.stdout.split("\n")[0], said);
        assert.match(text.stdout, new RegExp(`project: ${project}/\\.claude/settings\\.json`));
        assert.equal(JSON.parse((await run(["doctor", "--json"])).stdout).root, project);
      });
      await t.step("init --scope project", async () => {
        const text = await run(["init", "--scope", "project"]);
        assert.equal(text.code, 0, text.stderr);
        assert.equal(text.stdout.split("\n")[0], said);
        await Deno.stat(`${project}/.claude/settings.json`);
        await assert.rejects(Deno.stat(`${cwd}/.claude`), Deno.errors.NotFound);
        const json = JSON.parse((await run(["init", "--scope", "project", "--json"])).stdout);
        assert.equal(json.root, project);
      });
      await t.step("fail init, fail handle, fail list", async () => {
        const init = await run(["fail", "init"]);
        assert.equal(init.code, 0, init.stderr);
        assert.equal(init.stdout.split("\n")[0], said);
        await Deno.stat(`${project}/.EnjoyHarness/GLOBAL_STATE.md`);
        const args = ["fail", "handle", "--task", "T1", "--skill", "build", "--error", "x"];
        const handled = await run([...args, "--no-rollback", "--json"]);
        assert.equal(JSON.parse(handled.stdout).root, project, handled.stderr);
        assert.equal(JSON.parse((await run(["fail", "list", "--json"])).stdout).root, project);
      });
      await t.step("fail: the harness a loop set up below the top is its root", async () => {
        const pkg = `${project}/packages/a`;
        await Deno.mkdir(`${pkg}/src`, { recursive: true });
        assert.equal((await run(["fail", "init", "--root", pkg])).code, 0);
        const inside = (args: string[]) => runInProcess(args, { cwd: `${pkg}/src`, env });
        const args = ["fail", "handle", "--task", "T1", "--skill", "build", "--error", "x"];
        const handled = await inside([...args, "--no-rollback"]);
        assert.equal(handled.code, 0, handled.stderr);
        assert.equal(
          handled.stdout.split("\n")[0],
          `project root: ${pkg} (the nearest directory with the loop's harness, .EnjoyHarness/)`,
        );
        // status still reports the project, not the package.
        assert.equal(JSON.parse((await inside(["status", "--json"])).stdout).root, project);
      });
      await t.step(
        "an explicit --root is taken as given, and one that does not exist refused",
        async () => {
          const given = await run(["status", "--json", "--root", cwd]);
          assert.equal(JSON.parse(given.stdout).root, cwd);
          const typo = await run(["status", "--root", `${dir}/typo`]);
          assert.equal(typo.code, 1);
          assert.match(typo.stderr, /the project root ".*\/typo" does not exist/);
        },
      );
    });
  },
});
