// The second red team's findings against the rollback (issue 12), each a state a real repository
// can be in: odd names, crafted backups, sparse checkouts, git hooks, killed restores. Commands
// run in this process (`here`) unless the process boundary is the point.
import assert from "node:assert/strict";
import { commitAll, git, makeRepo } from "./helpers/git_repo.ts";
import { handle, here, rollbackHere, setUp, state } from "./helpers/harness.ts";
import { denoCacheDir, lifelineCommand } from "./helpers/lifeline.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { exactTree, indexState, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";
import { craftBackup, gitStdin } from "./helpers/crafted_backup.ts";

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

Deno.test({
  name: "a crafted backup (paths with .., in .git, through its own links) is refused whole",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "1\n" });
      const victim = `${dir}/victim`;
      await Deno.mkdir(`${victim}/dir/sub`, { recursive: true });
      await Deno.writeTextFile(`${victim}/dir/sub/data`, "precious\n");
      await Deno.writeTextFile(`${victim}/file`, "keep\n");
      const outside = await exactTree(victim);
      const oid = await gitStdin(repo, ["hash-object", "-w", "--stdin"], "#!/bin/sh\necho pwned\n");
      const file = { kind: "file", mode: 0o755, size: 20, oid };
      const link = { kind: "symlink", target: victim, oid };
      const cases: [string, Record<string, unknown>, RegExp][] = [
        [
          "dotdot",
          { "../victim/dir": link, "../victim/file": file },
          /\.\.\/victim\/dir \(not a plain relative path\)/,
        ],
        ["hook", { ".git/hooks/post-commit": file }, /post-commit \(inside a \.git directory\)/],
        ["own", { ".EnjoyHarness/handle-failure.json": file }, /\(lifeline's own state\)/],
        ["via-link", { "l": link, "l/file": file }, /l\/file \(l is no saved directory\)/],
      ];
      for (const [name, paths, why] of cases) {
        await craftBackup(repo, name, paths);
        const restore = await here(dir, ["fail", "restore", name]);
        assert.equal(restore.code, 1, restore.stdout);
        assert.match(restore.stderr, /is not a backup lifeline can restore/);
        assert.match(restore.stderr, why);
      }
      // A scope that is a link now: its saved paths would be written through it.
      await Deno.symlink(victim, `${repo}/sub`);
      await craftBackup(repo, "scope-link", { "sub/file": file }, "sub");
      const linked = await here(dir, ["fail", "restore", "scope-link"]);
      assert.equal(linked.code, 1);
      assert.match(linked.stderr, /sub\/ is not a directory of the work tree/);
      const branch = await here(dir, ["fail", "restore", "refs/heads/main"]);
      assert.equal(branch.code, 1);
      assert.match(branch.stderr, /refs\/heads\/main is not a backup/);
      assert.deepEqual(await exactTree(victim), outside, "nothing outside the repository changed");
      await assert.rejects(Deno.lstat(`${repo}/.git/hooks/post-commit`), Deno.errors.NotFound);
      await assert.rejects(Deno.lstat(`${repo}/l`), Deno.errors.NotFound);
    });
  },
});

Deno.test({
  name:
    "core.splitIndex: the backup holds a whole index, restorable after git expires the shared one",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const files = Object.fromEntries(
        Array.from({ length: 30 }, (_, i) => [`f${i}.txt`, `${i}\n`]),
      );
      const repo = await setUp(dir, files);
      await git(repo, "config", "core.splitIndex", "true");
      await git(repo, "update-index", "--split-index");
      await Deno.writeTextFile(`${repo}/f1.txt`, "later\n");
      await commitAll(repo, "later");
      await Deno.writeTextFile(`${repo}/f2.txt`, "staged\n");
      await git(repo, "add", "f2.txt");
      await Deno.writeTextFile(`${repo}/ita.txt`, "intent to add\n");
      await git(repo, "add", "-N", "ita.txt");
      await Deno.writeTextFile(`${repo}/f3.txt`, "unstaged\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);
      const rollback = await rollbackHere(dir, "S");
      assert.equal(rollback.done, true, JSON.stringify(rollback));
      // Weeks later: the index is whole again, and git has removed every shared index.
      await git(repo, "update-index", "--no-split-index");
      for await (const entry of Deno.readDir(`${repo}/.git`)) {
        if (entry.name.startsWith("sharedindex.")) await Deno.remove(`${repo}/.git/${entry.name}`);
      }
      const restore = await here(dir, ["fail", "restore", rollback.backup]);
      assert.equal(restore.code, 0, restore.stderr);
      assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
      assert.equal(await indexState(repo), status);
    });
  },
});

Deno.test({
  name:
    "a clean submodule moved since the stable commit: rollback, restore and the next rollback work",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const sub = await makeRepo(`${dir}/sub`, { "s.txt": "1\n" });
      const s1 = await git(sub, "rev-parse", "HEAD");
      await Deno.writeTextFile(`${sub}/s.txt`, "2\n");
      await commitAll(sub, "s2");
      const repo = await makeRepo(`${dir}/repo`, { "a.txt": "1\n" });
      const add = ["-c", "protocol.file.allow=always", "submodule", "--quiet", "add", sub, "lib"];
      await git(repo, ...add);
      await git(`${repo}/lib`, "checkout", "--quiet", s1);
      await commitAll(repo, "lib at s1");
      await git(repo, "tag", "-f", "stable-1");
      assert.equal((await here(dir, ["fail", "init"])).code, 0);
      await git(`${repo}/lib`, "checkout", "--quiet", "main");
      await Deno.writeTextFile(`${repo}/a.txt`, "2\n");
      await commitAll(repo, "lib at s2");
      await Deno.writeTextFile(`${repo}/a.txt`, "uncommitted work\n");
      const before = await exactTree(repo, { skip: [...OWN, "lib"] });
      const status = await indexState(repo);

      const rollback = await rollbackHere(dir, "M1");
      assert.equal(rollback.done, true, JSON.stringify(rollback));
      assert.equal(await Deno.readTextFile(`${repo}/a.txt`), "1\n");
      const restore = await here(dir, ["fail", "restore", rollback.backup]);
      assert.equal(restore.code, 0, restore.stderr);
      assert.deepEqual(await exactTree(repo, { skip: [...OWN, "lib"] }), before);
      assert.equal(await indexState(repo), status);
      assert.equal((await rollbackHere(dir, "M2")).done, true, "and the next rollback");
    });
  },
});

Deno.test({
  name: "sparse checkouts and skip-worktree entries: rolled back in the index, restored exactly",
  ignore: IGNORE,
  async fn(t) {
    const skip = (path: string) => (repo: string) =>
      git(repo, "update-index", "--skip-worktree", path).then(() => {});
    const cases: {
      name: string;
      files?: Record<string, string>;
      links?: Record<string, string>;
      arrange: (repo: string) => Promise<void>;
      /** What the rollback left, checked before the restore. */
      rolledBack?: (repo: string) => Promise<void>;
    }[] = [
      {
        name: "a file outside the sparse cone added after the stable commit",
        files: { "in/a": "1\n", "out/b": "1\n" },
        async arrange(repo) {
          await Deno.writeTextFile(`${repo}/out/added`, "new\n");
          await commitAll(repo, "added outside the cone");
          await git(repo, "sparse-checkout", "set", "--cone", "in");
          await Deno.writeTextFile(`${repo}/in/a`, "local\n", { append: true });
        },
      },
      { name: "an unchanged skip-worktree link", links: { p: "a.txt" }, arrange: skip("p") },
      {
        name: "an unchanged skip-worktree link to nothing",
        links: { p: "no" },
        arrange: skip("p"),
      },
      { name: "an unchanged skip-worktree p\\nq", files: { "p\nq": "v\n" }, arrange: skip("p\nq") },
      {
        name: "assume-unchanged files with local edits, one changed since the stable commit",
        files: { "au.txt": "1\n", "au2.txt": "1\n" },
        async arrange(repo) {
          await Deno.writeTextFile(`${repo}/au.txt`, "2\n");
          await commitAll(repo, "au.txt changed");
          await git(repo, "update-index", "--assume-unchanged", "au.txt", "au2.txt");
          await Deno.writeTextFile(`${repo}/au.txt`, "local edit\n");
          await Deno.writeTextFile(`${repo}/au2.txt`, "local edit 2\n");
        },
      },
      {
        name: "a skip-worktree file with local changes: left as it is",
        files: { "settings.json": "{}\n" },
        async arrange(repo) {
          await skip("settings.json")(repo);
          await Deno.writeTextFile(`${repo}/settings.json`, '{"local": true}\n');
        },
        async rolledBack(repo) {
          assert.equal(await Deno.readTextFile(`${repo}/settings.json`), '{"local": true}\n');
        },
      },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, { "a.txt": "1\n", ...c.files });
          for (const [path, target] of Object.entries(c.links ?? {})) {
            await Deno.symlink(target, `${repo}/${path}`);
            await git(repo, "add", path);
            await git(repo, "commit", "--quiet", "--amend", "--no-edit");
            await git(repo, "tag", "-f", "stable-1");
          }
          await Deno.writeTextFile(`${repo}/a.txt`, "2\n");
          await commitAll(repo, "later");
          await c.arrange(repo);
          const before = await exactTree(repo, { skip: OWN });
          const status = await indexState(repo);
          const rollback = await rollbackHere(dir, "P1");
          assert.equal(rollback.done, true, JSON.stringify(rollback));
          assert.equal(await Deno.readTextFile(`${repo}/a.txt`), "1\n");
          assert.equal(
            await git(repo, "diff", "--cached", "--name-only", "stable-1"),
            "",
            "the index is the stable commit's",
          );
          await c.rolledBack?.(repo);
          const restore = await here(dir, ["fail", "restore", rollback.backup]);
          assert.equal(restore.code, 0, restore.stderr);
          assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
          assert.equal(await indexState(repo), status);
        });
      });
    }
  },
});

/** Runs `script` in sh in `cwd`; its stdout, bytes as they are (names that are not UTF-8). */
async function shBytes(cwd: string, script: string): Promise<Uint8Array> {
  const out = await new Deno.Command("sh", { args: ["-c", script], cwd, stderr: "inherit" })
    .output();
  assert.equal(out.code, 0, script);
  return out.stdout;
}

/** Every path below `repo` but .git and lifeline's state, raw: type, mode, name, content hash. */
const rawTree = (repo: string) =>
  shBytes(
    repo,
    "find . \\( -name .git -o -name .EnjoyHarness -o -name .lifeline -o -name .trace " +
      "-o -name sessions -o -name logs \\) -prune -o -printf '%y %m %p %l\\0' | LC_ALL=C sort -z; " +
      "find . -name .git -prune -o -type f ! -path './.EnjoyHarness/*' ! -path './.trace/*' " +
      "-exec sha1sum {} + | LC_ALL=C sort; git status --porcelain=v2 -z --untracked-files=all",
  );

Deno.test({
  name: "file names and link targets that are not UTF-8: refused, counted, and nothing changes",
  ignore: IGNORE,
  async fn(t) {
    // printf makes the Latin-1 bytes: Deno cannot name such a file, so sh writes them.
    const latin1 = (name: string) => `"$(printf '${name}')"`;
    const cases: { name: string; files?: Record<string, string>; script: string }[] = [
      {
        name: "a tracked r\\xe9sum\\xe9.txt with edits never staged",
        script: `printf v1 > ${latin1("r\\351sum\\351.txt")} && git add -A . && ` +
          `git commit -qm latin1 && git tag -f stable-1 >/dev/null && echo 2 > a.txt && ` +
          `git commit -qam later && echo UNCOMMITTED > ${latin1("r\\351sum\\351.txt")}`,
      },
      {
        name: "a staged file with such a name, new since the stable commit",
        script: `echo 2 > a.txt && git commit -qam later && ` +
          `echo precious > ${latin1("r\\351sum\\351.txt")} && git add ${
            latin1("r\\351sum\\351.txt")
          }`,
      },
      {
        name: "a link to caf\\xe9.txt where the stable commit has a link",
        script: `ln -s a.txt lnk && git add lnk && git commit -qm link && ` +
          `git tag -f stable-1 >/dev/null && echo 2 > a.txt && git commit -qam later && ` +
          `rm lnk && ln -s ${latin1("caf\\351.txt")} lnk`,
      },
      {
        name: "an untracked directory holding such a name where the stable commit has a file",
        files: { "d": "a file in the stable commit\n" },
        script: `git rm -q --cached d && rm d && mkdir d && echo mine > d/${
          latin1("\\351t\\351.txt")
        } && echo d >> .git/info/exclude && echo 2 > a.txt && git commit -qam later`,
      },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        await withTempDir(async (dir) => {
          const repo = await setUp(dir, { "a.txt": "1\n", ...c.files });
          await shBytes(repo, c.script);
          const before = await rawTree(repo);
          for (let i = 1; i <= 2; i++) {
            const { rollback } = await handle(dir, "L1");
            assert.equal(rollback.status, "refused", JSON.stringify(rollback));
            assert.match(rollback.refused, /not UTF-8/);
            assert.equal((await state(repo)).tasks.L1, i, "the refusal is counted");
          }
          assert.deepEqual(await rawTree(repo), before);
          assert.equal(await git(repo, "for-each-ref", "refs/lifeline/backups/"), "");
        });
      });
    }
  },
});
