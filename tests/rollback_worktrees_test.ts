// Work trees and branches (issue 12, second red team): backups and refs are shared by every work
// tree of a repository, journals and checkouts are not. A backup is restored only where it was
// made, the stable mark of one work tree is not another's, and a prune anywhere keeps what an
// interrupted run in any work tree still needs.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { backupRefs, here, killingGit, lifeline, rollbackHere, setUp } from "./helpers/harness.ts";
import { exactTree, indexState, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

Deno.test({
  name: "restore refuses a backup made on another branch or in another work tree",
  ignore: IGNORE,
  async fn(t) {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "1\n" });
      await Deno.writeTextFile(`${repo}/a.txt`, "2\n");
      await commitAll(repo, "work on main");
      const main = await git(repo, "rev-parse", "HEAD");
      await Deno.writeTextFile(`${repo}/a.txt`, "3, uncommitted\n");
      await Deno.writeTextFile(`${repo}/notes.txt`, "untracked\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);
      const { backup } = await rollbackHere(dir, "W1");
      const stable = await git(repo, "rev-parse", "stable-1");

      await t.step("another branch at the same commit: its branch does not move", async () => {
        await git(repo, "switch", "--quiet", "-c", "experiment");
        const restore = await here(dir, ["fail", "restore", backup]);
        assert.equal(restore.code, 1, restore.stdout);
        assert.match(restore.stderr, /was made on main, and experiment is checked out now/);
        assert.match(restore.stderr, /git switch main/);
        assert.equal(await git(repo, "rev-parse", "experiment"), stable);
        assert.equal(await git(repo, "rev-parse", "main"), stable);
        await git(repo, "switch", "--quiet", "main");
      });

      await t.step("another work tree: nothing of this one lands there", async () => {
        const other = `${dir}/other`;
        await git(repo, "worktree", "add", "--quiet", "-b", "feat", other, "stable-1");
        assert.equal((await here(dir, ["fail", "init"], other)).code, 0);
        const theirs = await exactTree(other, { skip: OWN });
        const restore = await here(dir, ["fail", "restore", backup], other);
        assert.equal(restore.code, 1, restore.stdout);
        assert.match(restore.stderr, /was made in another work tree of this repository/);
        assert.equal(await git(other, "rev-parse", "feat"), stable);
        assert.deepEqual(await exactTree(other, { skip: OWN }), theirs);
      });

      await t.step("where it was made, it restores exactly", async () => {
        const restore = await here(dir, ["fail", "restore", backup]);
        assert.equal(restore.code, 0, restore.stderr);
        assert.equal(await git(repo, "rev-parse", "main"), main);
        assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
        assert.equal(await indexState(repo), status);
      });
    });
  },
});

Deno.test({
  name: "each work tree keeps its own stable mark: another's success never moves it back",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "v1\n" });
      const v1 = await git(repo, "rev-parse", "HEAD");
      for (const v of ["v2", "v3"]) {
        await Deno.writeTextFile(`${repo}/a.txt`, `${v}\n`);
        await commitAll(repo, v);
      }
      const success = ["fail", "handle", "--success", "--task", "T", "--skill", "s"];
      assert.equal((await here(dir, success)).code, 0);
      const other = `${dir}/other`;
      await git(repo, "worktree", "add", "--quiet", "-b", "older", other, v1);
      assert.equal((await here(dir, ["fail", "init"], other)).code, 0);
      assert.equal((await here(dir, success, other)).code, 0, "the other agent's success at v1");

      await Deno.writeTextFile(`${repo}/a.txt`, "v4\n");
      await commitAll(repo, "v4");
      await Deno.writeTextFile(`${repo}/a.txt`, "work in progress\n");
      const rollback = await rollbackHere(dir, "T");
      assert.equal(rollback.done, true, JSON.stringify(rollback));
      assert.equal(await Deno.readTextFile(`${repo}/a.txt`), "v3\n", "back to its own mark");
      assert.equal(await git(repo, "log", "-1", "--format=%s"), "v3");
      assert.equal(await git(other, "rev-parse", "HEAD"), v1);
    });
  },
});

Deno.test({
  name: "a newer stable tag on another branch is passed over for the newest on this one",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "1\n" }); // stable-1
      await git(repo, "switch", "--quiet", "-c", "side");
      await Deno.writeTextFile(`${repo}/a.txt`, "side\n");
      await commitAll(repo, "side");
      // An annotated tag dated later than anything on main: the newest of the stable tags.
      const later = { GIT_COMMITTER_DATE: `${Math.floor(Date.now() / 1000) + 3600} +0000` };
      const tag = ["tag", "-a", "-m", "side is stable", "stable-2"];
      assert.ok(
        (await new Deno.Command("git", { args: tag, cwd: repo, env: later }).output()).success,
      );
      await git(repo, "switch", "--quiet", "main");
      await Deno.writeTextFile(`${repo}/a.txt`, "2\n");
      await commitAll(repo, "later on main");
      const rollback = await rollbackHere(dir, "T");
      assert.equal(rollback.done, true, JSON.stringify(rollback));
      assert.match(rollback.to, /\(stable-1\)$/);
      assert.equal(await Deno.readTextFile(`${repo}/a.txt`), "1\n");
    });
  },
});

Deno.test({
  name: "fail prune in another work tree keeps the backup an interrupted run still needs",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "1\n" });
      const other = `${dir}/other`;
      await git(repo, "worktree", "add", "--quiet", "-b", "other", other);
      await Deno.writeTextFile(`${repo}/a.txt`, "2\n");
      await commitAll(repo, "later");
      await Deno.writeTextFile(`${repo}/a.txt`, "precious, uncommitted\n");
      await Deno.writeTextFile(`${repo}/n.txt`, "precious, new\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);
      // Killed after the work tree went back, before HEAD moved: the journal names the backup.
      const path = await killingGit(dir, "lifeline: rollback");
      const args = ["fail", "handle", "--task", "T", "--skill", "s", "--error", "x", "--unstable"];
      const killed = await lifeline(dir, args, repo, undefined, { PATH: path });
      assert.equal(killed.code, 137, killed.stderr);
      const journal = JSON.parse(await Deno.readTextFile(`${repo}/.git/lifeline/journal.json`));
      assert.match(journal.backup, /^refs\/lifeline\/backups\/T-/);

      const prune = await here(dir, ["fail", "prune", "--keep", "0"], other);
      assert.equal(prune.code, 0, prune.stderr);
      assert.ok((await backupRefs(repo)).includes(journal.backup), "the backup is kept");
      const restore = await here(dir, ["fail", "restore", journal.backup]);
      assert.equal(restore.code, 0, restore.stderr);
      assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
      assert.equal(await indexState(repo), status);
    });
  },
});
