// The rollback at the sizes of real projects (issue 12, second red team): thousands of tracked and
// changed files, which git answers through pipes that fill up, run through the real binary with a
// deadline, so a hang fails the test instead of stalling it.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { handle, restore, setUp } from "./helpers/harness.ts";
import { exactTree, indexState, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** Writes `count` files `d/f<i>` with `text(i)`, a few hundred at a time. */
async function writeMany(repo: string, count: number, text: (i: number) => string) {
  await Deno.mkdir(`${repo}/d`, { recursive: true });
  for (let start = 0; start < count; start += 500) {
    const batch = Array.from({ length: Math.min(500, count - start) }, (_, k) => start + k);
    await Promise.all(batch.map((i) => Deno.writeTextFile(`${repo}/d/f${i}`, text(i))));
  }
}

Deno.test({
  name: "4,000 changed files: the rollback and the restore finish, and the restore is exact",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "stable\n" });
      await writeMany(repo, 4000, (i) => `file ${i}\n`);
      await commitAll(repo, "4,000 files");
      await git(repo, "tag", "-f", "stable-1");
      // Each file's output in `git cat-file --batch` is 1 KB: 4 MB through a 64 KB pipe.
      const kilobyte = "x".repeat(1000);
      await writeMany(repo, 4000, (i) => `${kilobyte} ${i}\n`);
      await Deno.writeTextFile(`${repo}/a.txt`, "uncommitted\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);

      const out = await handle(dir, "S1");
      assert.equal(out.rollback.done, true, JSON.stringify(out.rollback));
      assert.equal(await Deno.readTextFile(`${repo}/d/f3999`), "file 3999\n");
      const back = await restore(dir, out.rollback.backup);
      assert.equal(back.code, 0, back.stderr);
      assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
      assert.equal(await indexState(repo), status);
    });
  },
});
