// The rollback at the sizes and speeds of real projects (issue 12, second red team): thousands of
// changed files, which git answers through pipes that fill up (run through the real binary with a
// deadline, so a hang fails the test instead of stalling it), and an agent that keeps writing
// while the rollback runs.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { handle, restore, rollbackHere, setUp } from "./helpers/harness.ts";
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

Deno.test({
  name: "an agent appending to a file during the rollback: every line is on disk or in the backup",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "live.txt": "base\n" });
      await writeMany(repo, 1500, (i) => `file ${i}\n`);
      await commitAll(repo, "1,500 files");
      await git(repo, "tag", "-f", "stable-1");
      await writeMany(repo, 1500, (i) => `changed ${i}\n`); // a rollback that takes a while
      const writer = new Deno.Command("sh", {
        args: [
          "-c",
          'n=0; while [ ! -e ../stop ]; do n=$((n+1)); echo "line $n" >> live.txt; ' +
          "echo $n >> ../written; done",
        ],
        cwd: repo,
      }).spawn();
      while (!(await Deno.lstat(`${dir}/written`).catch(() => null))) await sleep(5);
      const rollback = await rollbackHere(dir, "W1");
      await Deno.writeTextFile(`${dir}/stop`, "");
      await writer.status;
      assert.equal(rollback.done, true, JSON.stringify(rollback));
      const written = (await Deno.readTextFile(`${dir}/written`)).trim().split("\n");
      const kept = new Set(
        [
          await git(repo, "show", `${rollback.backup}:live.txt`),
          await Deno.readTextFile(`${repo}/live.txt`),
        ]
          .flatMap((text) => text.split("\n")),
      );
      const lost = written.filter((n) => !kept.has(`line ${n}`));
      assert.deepEqual(lost, [], `${lost.length} of ${written.length} lines in neither`);
      assert.equal(await Deno.readTextFile(`${repo}/d/f1499`), "file 1499\n");
    });
  },
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
