// What a rollback cannot save it refuses, before changing anything, with one line that says what
// to do, and the failure is still counted, so the breaker still opens. What it does not need to
// save (a nested repository or a large file out of its way) it leaves alone.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { backupRefs, handle, setUp, state, untrack } from "./helpers/harness.ts";
import { diskBytes, exactTree, indexState, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

async function useConfig(repo: string, breaker: Record<string, number>): Promise<void> {
  await Deno.writeTextFile(
    `${repo}/.lifeline/config.json`,
    JSON.stringify({ breaker: { maxIterations: 1000, ...breaker } }),
  );
}

const randomBytes = (n: number) => crypto.getRandomValues(new Uint8Array(n));

async function bigFile(path: string, mb: number): Promise<void> {
  const chunks = Array.from({ length: mb * 16 }, () => randomBytes(65536));
  await Deno.writeFile(path, new Uint8Array(await new Blob(chunks).arrayBuffer()));
}

interface RefusalCase {
  name: string;
  files: Record<string, string>;
  arrange(repo: string): Promise<void>;
  refused: RegExp;
}

const REFUSALS: RefusalCase[] = [
  {
    name: "an unmerged index without MERGE_HEAD (a conflicted stash pop)",
    files: { "a.txt": "1\n" },
    async arrange(repo) {
      await Deno.writeTextFile(`${repo}/a.txt`, "2, stashed\n");
      await git(repo, "stash", "--quiet");
      await Deno.writeTextFile(`${repo}/a.txt`, "3, committed\n");
      await commitAll(repo, "conflicting change");
      await git(repo, "stash", "pop", "--quiet").catch(() => {}); // conflicts, stash kept
    },
    refused: /^the index has unmerged paths \(a conflicted merge or stash pop\): a\.txt$/,
  },
  {
    name: "a nested repository without commits in the way",
    files: { "vendor/x.txt": "vendored\n" },
    async arrange(repo) {
      await untrack(repo, "vendor");
      await Deno.remove(`${repo}/vendor`, { recursive: true });
      await git(repo, "init", "--quiet", "vendor");
      await Deno.writeTextFile(`${repo}/vendor/notes.txt`, "work in the nested repository\n");
    },
    refused: /^a nested git repository is in the way of the rollback: vendor$/,
  },
  {
    name: "a file above breaker.maxBackupFileMB in the way",
    files: { "data.bin": "small in the stable commit\n" },
    async arrange(repo) {
      await useConfig(repo, { maxBackupFileMB: 1 });
      await untrack(repo, "data.bin");
      await bigFile(`${repo}/data.bin`, 2);
    },
    refused:
      /^files above breaker\.maxBackupFileMB \(1\.0 MB\) would have to be saved: data\.bin \(2\.0 MB\)$/,
  },
  {
    name: "backups that would grow past breaker.maxBackupsMB",
    files: { "data.bin": "small in the stable commit\n" },
    async arrange(repo) {
      await useConfig(repo, { maxBackupsMB: 0.001 });
      await untrack(repo, "data.bin");
      await Deno.writeFile(`${repo}/data.bin`, randomBytes(4096));
    },
    refused: /^backups would hold 4\.0 KB, over breaker\.maxBackupsMB \(1\.0 KB\)$/,
  },
];

Deno.test({
  name: "refusals come before any change, say what to do, and are counted",
  ignore: IGNORE,
  async fn(t) {
    for (const c of REFUSALS) {
      await t.step(c.name, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, { "README.md": "hello\n", ...c.files }, { budget: 1000 });
          await Deno.writeTextFile(`${repo}/README.md`, "later\n");
          await commitAll(repo, "later work");
          await c.arrange(repo);
          const before = await exactTree(repo, { skip: OWN });
          const status = await indexState(repo);
          const outs = [];
          for (let i = 0; i < 3; i++) outs.push(await handle(dir, "R1"));
          for (const out of outs) {
            assert.equal(out.rollback.status, "refused");
            assert.match(out.rollback.refused, c.refused);
            assert.doesNotMatch(out.rollback.refused, /refused/, "said once, not twice");
            assert.ok(out.rollback.hint, "says what to do");
          }
          assert.equal((await state(repo)).tasks.R1, 3, "each refusal counted");
          assert.equal(outs[2].breaker, "opened");
          assert.equal(outs[2].code, 10);
          assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
          assert.equal(await indexState(repo), status);
          assert.deepEqual(await backupRefs(repo), [], "no backup refs left behind");
          const gitDir = `${repo}/.git/lifeline`;
          for (const leftover of ["journal.json", "set-aside", "tmp"]) {
            await assert.rejects(Deno.lstat(`${gitDir}/${leftover}`), Deno.errors.NotFound);
          }
          await assert.rejects(Deno.lstat(`${repo}/.git/index.lock`), Deno.errors.NotFound);
        });
      });
    }
  },
});

Deno.test({
  name: "what is not in the rollback's way is left alone, and not saved",
  ignore: IGNORE,
  async fn(t) {
    const cases: [string, (repo: string) => Promise<void>][] = [
      ["a nested repository without commits", async (repo) => {
        await git(repo, "init", "--quiet", "scratch");
        await Deno.writeTextFile(`${repo}/scratch/idea.txt`, "no commits here yet\n");
      }],
      ["a 5 MB untracked file", (repo) => bigFile(`${repo}/dataset.bin`, 5)],
    ];
    for (const [name, arrange] of cases) {
      await t.step(name, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, { "README.md": "hello\n" }, { budget: 1000 });
          await Deno.writeTextFile(`${repo}/README.md`, "later\n");
          await commitAll(repo, "later work");
          await arrange(repo);
          const untouched = await exactTree(repo, { skip: [...OWN, "README.md"] });
          const gitBefore = await diskBytes(`${repo}/.git`);
          const out = await handle(dir, "N1");
          assert.equal(out.rollback.done, true, JSON.stringify(out.rollback));
          assert.equal(await Deno.readTextFile(`${repo}/README.md`), "hello\n");
          assert.deepEqual(await exactTree(repo, { skip: [...OWN, "README.md"] }), untouched);
          const grown = (await diskBytes(`${repo}/.git`)) - gitBefore;
          assert.ok(grown < 200_000, `.git grew by ${grown} bytes saving what it did not touch`);
        });
      });
    }
  },
});
