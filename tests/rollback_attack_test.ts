// The second red team's findings against the rollback (issue 12), each a state a real repository
// can be in: odd names, crafted backups, sparse checkouts, git hooks, killed restores. Commands
// run in this process (`here`) unless the process boundary is the point.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { here, rollbackHere, setUp, state } from "./helpers/harness.ts";
import { denoCacheDir, lifelineCommand } from "./helpers/lifeline.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { exactTree, indexState, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

Deno.test({
  name: "a root named a\\b rolls back a\\b, never the other project in a/b",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a\\b/m.txt": "mine 1\n", "a/b/o.txt": "other 1\n" });
      await Deno.writeTextFile(`${repo}/a\\b/m.txt`, "mine 2\n");
      await Deno.writeTextFile(`${repo}/a/b/o.txt`, "other 2\n");
      await commitAll(repo, "later");
      await Deno.writeTextFile(`${repo}/a\\b/m.txt`, "mine, uncommitted\n");
      await Deno.writeTextFile(`${repo}/a/b/o.txt`, "the other agent's uncommitted work\n");
      const root = `${repo}/a\\b`;
      assert.equal((await here(dir, ["fail", "init", "--root", root], root)).code, 0);

      const rollback = await rollbackHere(dir, "B1", root);
      assert.equal(rollback.done, true, JSON.stringify(rollback));
      assert.equal(rollback.scope, "a\\b");
      assert.equal(await Deno.readTextFile(`${repo}/a\\b/m.txt`), "mine 1\n");
      assert.equal(
        await Deno.readTextFile(`${repo}/a/b/o.txt`),
        "the other agent's uncommitted work\n",
      );
    });
  },
});

Deno.test({
  name: "fail handle from a git hook (git commit -a) refuses, counts, and changes nothing",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "1\n", "b.txt": "1\n" });
      await Deno.writeTextFile(`${repo}/a.txt`, "2\n");
      await commitAll(repo, "later");
      const { program, args } = lifelineCommand();
      const hook = [
        "#!/bin/sh",
        `export HOME='${dir}/home' DENO_DIR='${denoCacheDir()}'`,
        `'${program}' ${args.map((a) => `'${a}'`).join(" ")} fail handle --task T1 --skill s ` +
        `--error boom --unstable --json > '${dir}/handle.json'`,
        "exit 1",
      ].join("\n");
      await Deno.writeTextFile(`${repo}/.git/hooks/pre-commit`, hook + "\n", { mode: 0o755 });
      await Deno.writeTextFile(`${repo}/a.txt`, "the agent's work\n");
      await Deno.writeTextFile(`${repo}/b.txt`, "the agent's work on b\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);

      await assert.rejects(git(repo, "commit", "--quiet", "-a", "-m", "try"));
      const rollback = JSON.parse(await Deno.readTextFile(`${dir}/handle.json`)).rollback;
      assert.equal(rollback.status, "refused", JSON.stringify(rollback));
      assert.match(rollback.refused, /^GIT_INDEX_FILE is set: lifeline runs inside a git command/);
      assert.equal((await state(repo)).tasks.T1, 1, "counted");
      assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
      assert.equal(await indexState(repo), status);
      const restore = await runInProcess(["fail", "restore", "refs/lifeline/backups/x"], {
        cwd: repo,
        env: { HOME: `${dir}/home`, GIT_INDEX_FILE: `${repo}/.git/index.lock` },
      });
      assert.equal(restore.code, 1);
      assert.match(restore.stderr, /GIT_INDEX_FILE is set/);
    });
  },
});
