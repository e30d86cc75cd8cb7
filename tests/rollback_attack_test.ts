// The second red team's findings against the rollback (issue 12), each a state a real repository
// can be in: odd names, crafted backups, sparse checkouts, git hooks, killed restores. Commands
// run in this process (`here`) unless the process boundary is the point.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { here, rollbackHere, setUp } from "./helpers/harness.ts";
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
