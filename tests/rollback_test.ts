// The rollback of `fail handle` on real git repositories, tried as an attacker would (issue 12):
// it never loses or reverts what it did not save, touches only the project's scope, never fights
// other sessions' hooks, and a killed run is finished by the next one.
import assert from "node:assert/strict";
import { commitAll, git, makeRepo } from "./helpers/git_repo.ts";
import {
  backupRefs,
  firstLine,
  handle,
  lifeline,
  restore,
  setUp,
  state,
  stateWriter,
  untrack,
} from "./helpers/harness.ts";
import { exactTree, indexState, inodes, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

Deno.test({
  name: "#1 an ignored file the stable commit still tracks is saved, and restore gives it back",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "config.local": "token=stable\n", "app.ts": "v1\n" }, {
        budget: 1000,
      });
      await git(repo, "rm", "--cached", "--quiet", "config.local");
      await Deno.writeTextFile(`${repo}/.gitignore`, "config.local\n");
      await commitAll(repo, "stop tracking config.local");
      await Deno.writeTextFile(`${repo}/config.local`, "token=edited-locally\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);

      const out = await handle(dir, "T1");
      assert.equal(out.rollback.done, true);
      assert.equal(await Deno.readTextFile(`${repo}/config.local`), "token=stable\n");
      assert.equal(
        await git(repo, "show", `${out.rollback.backup}:config.local`),
        "token=edited-locally",
        "the edited content is in the backup",
      );
      const back = await restore(dir, out.rollback.backup);
      assert.equal(back.code, 0, back.stderr);
      assert.equal(await Deno.readTextFile(`${repo}/config.local`), "token=edited-locally\n");
      assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
      assert.equal(await indexState(repo), status, "ignored and untracked again");
    });
  },
});

Deno.test({
  name: "#2 other sessions' writes to sessions/ and logs/ during rollbacks are never reverted",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const files: Record<string, string> = {};
      for (let i = 0; i < 300; i++) files[`src/f${i}.ts`] = `export const v${i} = 1;\n`;
      const repo = await setUp(dir, files, { budget: 1000 });
      const rounds = 300;
      const writer = stateWriter(repo, "count", String(rounds));
      for (let i = 0; i < 6; i++) {
        await Deno.writeTextFile(`${repo}/src/f${i}.ts`, "broken\n");
        assert.equal((await handle(dir, `W${i}`)).rollback.done, true);
      }
      assert.equal(await firstLine(writer), "done");
      assert.ok((await writer.status).success);
      assert.equal(
        Number(await Deno.readTextFile(`${repo}/sessions/agent2/fail-count-x.txt`)),
        rounds,
        "no increment lost",
      );
      const lines = (await Deno.readTextFile(`${repo}/logs/error-recovery.log`)).trim().split("\n");
      assert.equal(lines.length, rounds, "no log line lost");
    });
  },
});

Deno.test({
  name: "#3 lock files keep their inodes, and 20 concurrent rollbacks number the trace 1..20",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, undefined, { budget: 1000 });
      const writer = stateWriter(repo, "count", "5");
      assert.equal(await firstLine(writer), "done");
      await writer.status;
      await handle(dir, "L0"); // creates the harness lock
      const locks = [
        `${repo}/.EnjoyHarness/handle-failure.json.lock`,
        `${repo}/sessions/agent2/fail-count-x.txt.lock`,
      ];
      const before = await inodes(locks);
      await Deno.writeTextFile(`${repo}/README.md`, "changed\n");
      assert.equal((await handle(dir, "L1")).rollback.done, true);
      assert.deepEqual(await inodes(locks), before, "the same files, never replaced");

      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => handle(dir, `C${i}`)),
      );
      assert.ok(results.every((r) => r.rollback.done === true), JSON.stringify(results));
      const trace = await Deno.readTextFile(`${repo}/.trace/ERROR_TRACE.md`);
      const numbers = [...trace.matchAll(/## 失败记录 #(\d+)/g)].map((m) => Number(m[1]));
      assert.deepEqual(numbers, Array.from({ length: 22 }, (_, i) => i + 1));
      const s = await state(repo);
      assert.equal(s.failure_records, 22);
      for (let i = 0; i < 20; i++) assert.equal(s.tasks[`C${i}`], 1);
    });
  },
});

Deno.test({
  name:
    "#4 with a heartbeat hook writing, every rollback succeeds, is counted and names its backup",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const files: Record<string, string> = {};
      for (let i = 0; i < 100; i++) files[`src/f${i}.ts`] = `export const v${i} = 1;\n`;
      const repo = await setUp(dir, files, { budget: 1000 });
      // Like most projects, this one does not ignore sessions/ and logs/.
      await Deno.writeTextFile(
        `${repo}/.git/info/exclude`,
        ".EnjoyHarness/\n.trace/\n.lifeline/\n",
      );
      const writer = stateWriter(repo, "beat");
      try {
        assert.equal(await firstLine(writer), "ready");
        for (let i = 0; i < 10; i++) {
          await Deno.writeTextFile(`${repo}/src/f${i}.ts`, `broken ${i}\n`);
          const out = await handle(dir, `H${i}`);
          assert.equal(out.rollback.done, true, JSON.stringify(out.rollback));
          assert.match(out.rollback.backup, /^refs\/lifeline\/backups\/H\d-/);
          assert.equal(
            await Deno.readTextFile(`${repo}/src/f${i}.ts`),
            `export const v${i} = 1;\n`,
          );
        }
      } finally {
        writer.kill("SIGKILL");
        await writer.status;
        await writer.stdout.cancel();
      }
      const s = await state(repo);
      assert.equal(Object.keys(s.tasks).length, 10, "every failure counted");
      assert.equal((await backupRefs(repo)).length, 10);
    });
  },
});

Deno.test({
  name: "#5 a subdirectory root: only its subtree is restored, HEAD stays, packages/b untouched",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await makeRepo(`${dir}/repo`, {
        "packages/a/x.ts": "a1\n",
        "packages/b/y.ts": "b1\n",
        "top.txt": "top\n",
      });
      const root = `${repo}/packages/a`;
      assert.equal((await lifeline(dir, ["fail", "init", "--root", root], root)).code, 0);
      await Deno.writeTextFile(`${root}/x.ts`, "a2 committed\n");
      await Deno.writeTextFile(`${repo}/packages/b/y.ts`, "b2 committed\n");
      await commitAll(repo, "later work in both packages");
      const head = await git(repo, "rev-parse", "HEAD");
      await Deno.writeTextFile(`${root}/x.ts`, "a3 uncommitted\n");
      await Deno.writeTextFile(`${root}/new.ts`, "new in a\n");
      await Deno.writeTextFile(`${repo}/packages/b/y.ts`, "another agent's uncommitted work\n");
      await Deno.writeTextFile(`${repo}/packages/b/z.ts`, "untracked in b\n");
      const outside = await exactTree(repo, { skip: ["packages/a"] });
      const outsideInodes = await inodes([`${repo}/packages/b/y.ts`, `${repo}/top.txt`]);
      const beforeA = await exactTree(root, { skip: OWN });
      const status = await indexState(repo, "packages/a");

      const result = await lifeline(dir, [
        "fail",
        "handle",
        "--task",
        "M1",
        "--skill",
        "build",
        "--error",
        "x",
        "--unstable",
        "--root",
        root,
      ], root);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(await exactTree(repo, { skip: ["packages/a"] }), outside);
      assert.deepEqual(
        await inodes([`${repo}/packages/b/y.ts`, `${repo}/top.txt`]),
        outsideInodes,
      );
      assert.equal(await git(repo, "rev-parse", "HEAD"), head, "HEAD did not move");
      assert.equal(await Deno.readTextFile(`${root}/x.ts`), "a1\n");
      assert.match(
        result.stdout,
        /rollback: yes, packages\/a\/ restored from [0-9a-f]{12} \(stable-1\), HEAD did not move/,
      );
      const ref = /work saved as (\S+)/.exec(result.stdout)![1]!;
      const back = await restore(dir, ref);
      assert.equal(back.code, 0, back.stderr);
      assert.match(back.stdout, /packages\/a\/ \(HEAD did not move\)/);
      assert.deepEqual(await exactTree(root, { skip: OWN }), beforeA);
      assert.deepEqual(await exactTree(repo, { skip: ["packages/a"] }), outside);
      assert.equal(await indexState(repo, "packages/a"), status);
    });
  },
});

Deno.test({
  name: "#5 what another agent stages outside the root meanwhile survives the restore",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await makeRepo(`${dir}/repo`, {
        "packages/a/x.ts": "a1\n",
        "packages/a/skip.ts": "sparse\n",
        "packages/b/y.ts": "b1\n",
      });
      const root = `${repo}/packages/a`;
      assert.equal((await lifeline(dir, ["fail", "init", "--root", root], root)).code, 0);
      await Deno.writeTextFile(`${root}/x.ts`, "a2 staged\n");
      await git(repo, "add", "packages/a/x.ts");
      await Deno.writeTextFile(`${root}/planned.ts`, "planned\n");
      await git(repo, "add", "-N", "packages/a/planned.ts");
      await git(repo, "update-index", "--skip-worktree", "packages/a/skip.ts");
      const beforeA = await exactTree(root, { skip: OWN });
      const args = ["fail", "handle", "--task", "M2", "--skill", "s", "--error", "x", "--unstable"];
      const result = await lifeline(dir, [...args, "--json", "--root", root], root);
      const out = JSON.parse(result.stdout);
      assert.equal(out.rollback.done, true, result.stderr);
      // Meanwhile another agent works in packages/b, and stages it.
      await Deno.writeTextFile(`${repo}/packages/b/y.ts`, "b2 staged by another agent\n");
      await Deno.writeTextFile(`${repo}/packages/b/new.ts`, "new\n");
      await git(repo, "add", "packages/b/y.ts");
      await git(repo, "add", "-N", "packages/b/new.ts");
      const outsideIndex = await git(repo, "ls-files", "--stage", "-t", "--", "packages/b");
      const back = await restore(dir, out.rollback.backup);
      assert.equal(back.code, 0, back.stderr);
      assert.deepEqual(await exactTree(root, { skip: OWN }), beforeA);
      assert.equal(await git(repo, "ls-files", "--stage", "-t", "--", "packages/b"), outsideIndex);
      const status = await git(repo, "status", "--porcelain=v2", "--", "packages");
      assert.match(status, /^1 M\. N\.\.\. \S+ \S+ \S+ \S+ \S+ packages\/a\/x\.ts$/m);
      assert.match(status, /^1 \.A N\.\.\. 000000 000000 100644 0+ 0+ packages\/a\/planned\.ts$/m);
      assert.match(status, /^1 M\. N\.\.\. \S+ \S+ \S+ \S+ \S+ packages\/b\/y\.ts$/m);
      assert.match(status, /^1 \.A N\.\.\. 000000 000000 100644 0+ 0+ packages\/b\/new\.ts$/m);
      assert.match(await git(repo, "ls-files", "-t", "--", "packages/a/skip.ts"), /^S /);
    });
  },
});

/** One hostile state for #6: `arrange` runs on a repository tagged stable-1 with a later commit. */
interface ExactCase {
  name: string;
  files?: Record<string, string>;
  arrange(repo: string): Promise<void>;
}

const EXACT_CASES: ExactCase[] = [
  {
    name: "an untracked CRLF file under * text=auto",
    files: { ".gitattributes": "* text=auto\n" },
    arrange: (repo) => Deno.writeTextFile(`${repo}/notes.txt`, "one\r\ntwo\r\n"),
  },
  {
    name: "a CRLF file in the way (the stable commit tracks its path)",
    files: { ".gitattributes": "* text=auto\n", "notes.txt": "stable\n" },
    async arrange(repo) {
      await untrack(repo, "notes.txt");
      await Deno.writeTextFile(`${repo}/notes.txt`, "one\r\ntwo\r\n");
    },
  },
  {
    name: "an untracked 0600 private key",
    async arrange(repo) {
      await Deno.writeTextFile(`${repo}/id_ed25519`, "PRIVATE\n", { mode: 0o600 });
      await Deno.chmod(`${repo}/id_ed25519`, 0o600);
    },
  },
  {
    name: "a 0444 file in the way",
    files: { "ro.txt": "stable\n" },
    async arrange(repo) {
      await untrack(repo, "ro.txt");
      await Deno.writeTextFile(`${repo}/ro.txt`, "mine\n");
      await Deno.chmod(`${repo}/ro.txt`, 0o444);
    },
  },
  {
    name: "a tracked logs/rotate.sh with its exec bit (lifeline's logs/ is never touched)",
    async arrange(repo) {
      await Deno.mkdir(`${repo}/logs`);
      await Deno.writeTextFile(`${repo}/logs/rotate.sh`, "#!/bin/sh\n");
      await Deno.chmod(`${repo}/logs/rotate.sh`, 0o755);
      await git(repo, "add", "-f", "logs/rotate.sh");
      await commitAll(repo, "a rotation script");
    },
  },
  {
    name: "an intent-to-add entry (git add -N)",
    async arrange(repo) {
      await Deno.writeTextFile(`${repo}/planned.ts`, "planned\n");
      await git(repo, "add", "-N", "planned.ts");
    },
  },
  {
    // `git add -N e` in the work tree would add e/inner instead of e.
    name: "an intent-to-add entry whose path is now a directory",
    async arrange(repo) {
      await Deno.writeTextFile(`${repo}/e`, "");
      await git(repo, "add", "-N", "e");
      await Deno.remove(`${repo}/e`);
      await Deno.mkdir(`${repo}/e`);
      await Deno.writeTextFile(`${repo}/e/inner`, "x\n");
    },
  },
  {
    name: "intent-to-add entries below what is now a file, and an executable one",
    async arrange(repo) {
      await Deno.mkdir(`${repo}/c`);
      await Deno.writeTextFile(`${repo}/c/d.ts`, "d\n");
      await Deno.writeTextFile(`${repo}/run.sh`, "#!/bin/sh\n", { mode: 0o755 });
      await git(repo, "add", "-N", "c/d.ts", "run.sh");
      await Deno.remove(`${repo}/c`, { recursive: true });
      await Deno.writeTextFile(`${repo}/c`, "a file now\n");
    },
  },
  {
    name: "a staged change with more unstaged changes on top, and a deleted file",
    files: { "a.txt": "a1\n", "gone.txt": "bye\n" },
    async arrange(repo) {
      await Deno.writeTextFile(`${repo}/a.txt`, "a2 staged\n");
      await git(repo, "add", "a.txt");
      await Deno.writeTextFile(`${repo}/a.txt`, "a3 unstaged\n");
      await Deno.remove(`${repo}/gone.txt`);
    },
  },
  {
    name: "a symlink where the stable commit has a file, and a tracked file made 0700",
    files: { "target.txt": "t\n", "ln": "a file once\n", "run.sh": "#!/bin/sh\n" },
    async arrange(repo) {
      await untrack(repo, "ln");
      await Deno.remove(`${repo}/ln`);
      await Deno.symlink("target.txt", `${repo}/ln`);
      await Deno.chmod(`${repo}/run.sh`, 0o700);
    },
  },
  {
    name: "a directory of untracked files where the stable commit has a file, and the reverse",
    files: { "foo": "a file in stable\n", "bar/x": "a dir in stable\n" },
    async arrange(repo) {
      await untrack(repo, "foo", "bar");
      await Deno.remove(`${repo}/foo`);
      await Deno.remove(`${repo}/bar`, { recursive: true });
      await Deno.mkdir(`${repo}/foo/deep`, { recursive: true });
      await Deno.writeTextFile(`${repo}/foo/deep/u.txt`, "untracked inside\n");
      await Deno.chmod(`${repo}/foo/deep`, 0o750);
      await Deno.writeTextFile(`${repo}/bar`, "a file now\n");
    },
  },
];

Deno.test({
  name: "#6 rollback then restore is exact, bytes, modes, links and index, in hostile states",
  ignore: IGNORE,
  async fn(t) {
    for (const c of EXACT_CASES) {
      await t.step(c.name, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, { "README.md": "hello\n", ...c.files }, { budget: 1000 });
          await Deno.writeTextFile(`${repo}/README.md`, "committed after stable-1\n");
          await commitAll(repo, "later");
          await c.arrange(repo);
          const skip = OWN.filter((d) => d !== "logs");
          const before = await exactTree(repo, { skip });
          const status = await indexState(repo);
          const out = await handle(dir, "E1");
          assert.equal(out.rollback.done, true, JSON.stringify(out.rollback));
          assert.equal(await Deno.readTextFile(`${repo}/README.md`), "hello\n");
          const back = await restore(dir, out.rollback.backup);
          assert.equal(back.code, 0, back.stderr);
          assert.deepEqual(await exactTree(repo, { skip }), before);
          assert.equal(await indexState(repo), status);
        });
      });
    }
  },
});
