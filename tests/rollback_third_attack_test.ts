// The third red team's findings against the rollback (issue 12): names git reads differently from
// the file system (a trailing carriage return, any case of .git, task ids that are no ref names),
// attributes that changed since the stable commit, and a disk that fills up half-way.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { backupRefs, handle, here, rollbackHere, setUp, state } from "./helpers/harness.ts";
import { craftBackup, gitStdin } from "./helpers/crafted_backup.ts";
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

/** `stable-1` has a file `build`; now `build/` is an ignored directory holding `inside`. */
async function buildDirInTheWay(dir: string, inside: (build: string) => Promise<void>) {
  const repo = await setUp(dir, { "a.txt": "1\n", build: "stable build\n" });
  await git(repo, "rm", "--quiet", "build");
  await Deno.writeTextFile(`${repo}/.gitignore`, "build/\n");
  await commitAll(repo, "build becomes a directory");
  await Deno.mkdir(`${repo}/build`);
  await Deno.writeTextFile(`${repo}/build/out.txt`, "precious output\n");
  await inside(`${repo}/build`);
  return repo;
}

Deno.test({
  name: "a .GIT (any case) in the rollback's way is refused before anything changes, and counted",
  ignore: IGNORE,
  async fn(t) {
    const cases: { name: string; inside: (build: string) => Promise<void> }[] = [
      { name: "a file build/.GIT", inside: (b) => Deno.writeTextFile(`${b}/.GIT`, "x\n") },
      {
        name: "a directory build/.Git with a file in it",
        async inside(b) {
          await Deno.mkdir(`${b}/.Git`);
          await Deno.writeTextFile(`${b}/.Git/config`, "mine\n");
        },
      },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        await withTempDir(async (dir) => {
          const repo = await buildDirInTheWay(dir, c.inside);
          const before = await exactTree(repo, { skip: OWN });
          const status = await indexState(repo);
          for (let i = 1; i <= 2; i++) {
            const { rollback } = await handle(dir, "G1");
            assert.equal(rollback.status, "refused", JSON.stringify(rollback));
            assert.match(rollback.refused, /build\/\.git/i);
            assert.equal((await state(repo)).tasks.G1, i, "the refusal is counted");
          }
          assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
          assert.equal(await indexState(repo), status);
          assert.deepEqual(await backupRefs(repo), []);
        });
      });
    }
  },
});

Deno.test({
  name: "a backup that restore refuses: the hint shows its files, never says to delete it",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "1\n" });
      const oid = await gitStdin(repo, ["hash-object", "-w", "--stdin"], "precious\n");
      const file = { kind: "file", mode: 0o644, size: 9, oid };
      await craftBackup(repo, "old", { "build": { kind: "dir", mode: 0o755 }, "build/.GIT": file });
      const restored = await here(dir, ["fail", "restore", "old"]);
      assert.equal(restored.code, 1);
      assert.match(restored.stderr, /names the path build\/\.GIT/);
      assert.doesNotMatch(restored.stderr, /update-ref -d|remove it/);
      assert.match(restored.stderr, /git show refs\/lifeline\/backups\/old:<path>/);
      assert.deepEqual(await backupRefs(repo), ["refs/lifeline/backups/old"]);
    });
  },
});

Deno.test({
  name: "the stable commit's own .gitattributes apply to its files, as with git reset --hard",
  ignore: IGNORE,
  async fn(t) {
    const cases: { name: string; stable: Record<string, string>; head: Record<string, string> }[] =
      [
        {
          name: "attributes added since (eol=crlf, ident)",
          stable: { "a.txt": "l1\nl2\n", "i.c": "id $Id$\n" },
          head: {
            ".gitattributes": "*.txt eol=crlf\n*.c ident\n",
            "a.txt": "l1\nl2\nl3\n",
            "i.c": "id $Id$\nmore\n",
          },
        },
        {
          name: "attributes changed since (eol=crlf, then -text)",
          stable: { ".gitattributes": "*.txt eol=crlf\n", "a.txt": "l1\nl2\n" },
          head: { ".gitattributes": "*.txt -text\n", "a.txt": "l1\nl2\nl3\n" },
        },
        {
          name: "attributes in a subdirectory, removed since",
          stable: { "d/.gitattributes": "*.txt eol=crlf\n", "d/a.txt": "l1\n" },
          head: { "d/.gitattributes": "", "d/a.txt": "l1\nl2\n" },
        },
      ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, c.stable);
          for (const [path, text] of Object.entries(c.head)) {
            if (text === "") await Deno.remove(`${repo}/${path}`);
            else await Deno.writeTextFile(`${repo}/${path}`, text);
          }
          await commitAll(repo, "attributes");
          // The work tree as a checkout of HEAD writes it (its attributes applied).
          const files = Object.keys(c.head).filter((p) => !p.endsWith(".gitattributes"));
          for (const path of files) await Deno.remove(`${repo}/${path}`);
          await git(repo, "checkout", "--", ...files);
          await Deno.writeTextFile(`${repo}/untracked.txt`, "the agent's\n");
          // What git reset --hard to the stable commit gives, in a copy.
          const reference = `${dir}/reference`;
          const copy = await new Deno.Command("cp", { args: ["-a", repo, reference] }).output();
          assert.equal(copy.code, 0);
          await git(reference, "reset", "--quiet", "--hard", "stable-1");
          const expected = await exactTree(reference, { skip: OWN });

          await roundTrip(dir, "A1", async () => {
            assert.deepEqual(await exactTree(repo, { skip: OWN }), expected);
            assert.equal(await git(repo, "status", "--porcelain", "--untracked-files=no"), "");
          });
        });
      });
    }
  },
});

Deno.test({
  name: "task ids that are no ref names as they are (a..b, .hidden) still roll back and restore",
  ignore: IGNORE,
  async fn(t) {
    for (const task of ["a..b", ".hidden", "x.lock", "a.", "..x"]) {
      await t.step(task, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, { "a.txt": "1\n" });
          await Deno.writeTextFile(`${repo}/a.txt`, "2\n");
          await commitAll(repo, "later");
          await Deno.writeTextFile(`${repo}/a.txt`, "the agent's work\n");
          const rollback = await roundTrip(dir, task);
          assert.match(rollback.backup, /^refs\/lifeline\/backups\/[^.]/);
          assert.equal(
            JSON.parse(
              await git(repo, "show", `${rollback.backup}^3:manifest.json`),
            ).task,
            task,
            "the manifest names the task as given",
          );
        });
      });
    }
  },
});
