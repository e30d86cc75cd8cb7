// The third red team's findings against the rollback (issue 12): names git reads differently from
// the file system (a trailing carriage return, any case of .git, task ids that are no ref names),
// attributes that changed since the stable commit, and a disk that fills up half-way.
import assert from "node:assert/strict";
import { here, rollbackHere, setUp } from "./helpers/harness.ts";
import { exactTree, indexState, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** Rolls back task `task`, restores its backup, and checks that the work came back exactly. */
async function roundTrip(dir: string, task: string, rolledBack?: () => Promise<void>) {
  const repo = `${dir}/repo`;
  const before = await exactTree(repo, { skip: OWN });
  const status = await indexState(repo);
  const rollback = await rollbackHere(dir, task);
  assert.equal(rollback.done, true, JSON.stringify(rollback));
  await rolledBack?.();
  const restored = await here(dir, ["fail", "restore", rollback.backup]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
  assert.equal(await indexState(repo), status);
  return rollback;
}

Deno.test({
  name: "a file named notes\\r keeps its own edit through a rollback and a restore",
  ignore: IGNORE,
  async fn(t) {
    const cases: { name: string; files: Record<string, string> }[] = [
      { name: "beside a file named notes", files: { "notes\r": "stable\n", notes: "other\n" } },
      { name: "alone", files: { "notes\r": "stable\n" } },
      { name: "in a directory named d\\r", files: { "d\r/notes\r": "stable\n", "d/x": "x\n" } },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, { "a.txt": "1\n", ...c.files });
          const path = Object.keys(c.files)[0]!;
          await Deno.writeTextFile(`${repo}/${path}`, "the agent's edit\n");
          await roundTrip(dir, "CR", async () => {
            assert.equal(await Deno.readTextFile(`${repo}/${path}`), "stable\n");
          });
        });
      });
    }
  },
});
