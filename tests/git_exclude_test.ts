// `init` keeps lifeline's per-session state out of git: one marked block in info/exclude (the
// common directory's, for a worktree), a tracked .gitignore only with --gitignore; `doctor`
// warns when that state is tracked or not ignored. Real repositories, real `git status`.
import assert from "node:assert/strict";
import { git, makeRepo } from "./helpers/git_repo.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** `lifeline <args>` from `cwd`, HOME `<dir>/home`. */
function lifeline(dir: string, cwd: string, ...args: string[]) {
  return runInProcess(args, {
    cwd,
    env: { HOME: `${dir}/home`, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
  });
}

/** A repository whose info/exclude holds only git's own comment, as `git init` leaves it. */
async function plainRepo(path: string): Promise<string> {
  await makeRepo(path);
  await Deno.writeTextFile(`${path}/.git/info/exclude`, "# git ls-files --others\n*.swp\n");
  return path;
}

/** Every file lifeline writes for a session, and the files users own beside them. */
async function writeState(root: string): Promise<void> {
  const files = [
    "sessions/s1/heartbeat",
    "sessions/s1/session.json",
    "sessions/s1/session.json.lock",
    "sessions/s1/outbox.jsonl",
    "sessions/s1/outbox.jsonl.lock",
    "sessions/s1/status",
    "sessions/s1/stop-failure.json",
    "sessions/s1/failure-tracker.json",
    "sessions/s1/fail-count-WebFetch.txt",
    "sessions/s1/mcp-retry-mcp__github__x.json",
    "sessions/s1/handoffs/scavenged.md",
    "sessions/s1/session.json.corrupt-20261130T000000000Z",
    "logs/error-recovery.log",
    ".lifeline/finished-plan.json",
    // Owned by the user and their loop: git must still see these.
    "sessions/s1/ralph.json",
    ".lifeline/config.json",
    "logs/build.log",
  ];
  for (const file of files) {
    await Deno.mkdir(`${root}/${file}`.replace(/\/[^/]+$/, ""), { recursive: true });
    await Deno.writeTextFile(`${root}/${file}`, "{}\n");
  }
}

/** What `git status` would offer to `git add -A`, below `root`. */
async function untracked(root: string): Promise<string[]> {
  const out = await git(root, "status", "--porcelain", "--untracked-files=all", "--", ".");
  return out.split("\n").filter(Boolean).map((l) => l.slice(3)).sort();
}

Deno.test({
  name: "init adds one block to .git/info/exclude: git add -A leaves lifeline's state out",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const root = await plainRepo(`${dir}/project`);
      const first = await lifeline(dir, root, "init", "--scope", "project", "--json");
      assert.equal(first.code, 0, first.stderr);
      const exclude = `${root}/.git/info/exclude`;
      assert.deepEqual(JSON.parse(first.stdout).exclude, { file: exclude, changed: true });
      await writeState(root);
      assert.deepEqual(await untracked(root), [
        ".claude/settings.json",
        ".lifeline/config.json",
        "logs/build.log",
        "sessions/s1/ralph.json",
      ]);
      const text = await Deno.readTextFile(exclude);
      assert.match(text, /^# git ls-files --others\n\*\.swp\n# lifeline: begin/, "kept the user's");

      const second = await lifeline(dir, root, "init", "--scope", "project");
      assert.match(second.stdout, /info\/exclude already keeps lifeline's per-session state out/);
      assert.equal(await Deno.readTextFile(exclude), text, "idempotent");
      assert.equal(text.split("# lifeline: begin").length, 2, "one block");
    });
  },
});

Deno.test({
  name: "an older lifeline block is replaced in place; the lines around it are kept",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const root = await plainRepo(`${dir}/project`);
      const exclude = `${root}/.git/info/exclude`;
      await Deno.writeTextFile(
        exclude,
        "before\n# lifeline: begin (old)\n/sessions/\n# lifeline: end\nafter\n",
      );
      const result = await lifeline(dir, root, "init", "--scope", "project");
      assert.match(result.stdout, /^Added lifeline's per-session state to .*info\/exclude/m);
      const text = await Deno.readTextFile(exclude);
      assert.match(
        text,
        /^before\n# lifeline: begin \(its per-session state[^\n]*\n\/sessions\/\*\//,
      );
      assert.match(text, /\n!\/\.lifeline\/config\.json\n# lifeline: end\nafter\n$/);
      assert.doesNotMatch(text, /^\/sessions\/$/m);
    });
  },
});

Deno.test({
  name: "a root below the repository's top gets patterns anchored at its own path",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const top = await plainRepo(`${dir}/mono`);
      const root = `${top}/packages/app`;
      await Deno.mkdir(root, { recursive: true });
      assert.equal(
        (await lifeline(dir, root, "init", "--scope", "project", "--root", root)).code,
        0,
      );
      assert.match(
        await Deno.readTextFile(`${top}/.git/info/exclude`),
        /^\/packages\/app\/sessions\/\*\/heartbeat$/m,
      );
      await writeState(root);
      await writeState(top); // the top's own sessions/ is not this root's state
      const seen = await untracked(top);
      assert.ok(seen.includes("sessions/s1/heartbeat"), seen.join("\n"));
      assert.ok(!seen.includes("packages/app/sessions/s1/heartbeat"), seen.join("\n"));
    });
  },
});

Deno.test({
  name: "in a worktree the block goes to the common directory's info/exclude",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const main = await plainRepo(`${dir}/main`);
      await git(main, "worktree", "add", "--quiet", "-b", "side", `${dir}/side`);
      const result = await lifeline(dir, `${dir}/side`, "init", "--scope", "project", "--json");
      assert.equal(result.code, 0, result.stderr);
      assert.equal(JSON.parse(result.stdout).exclude.file, `${main}/.git/info/exclude`);
      await writeState(`${dir}/side`);
      assert.ok(!(await untracked(`${dir}/side`)).some((f) => f.endsWith("heartbeat")));
    });
  },
});

Deno.test({
  name: "a tracked .gitignore is left alone, unless --gitignore asks for it",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const root = await makeRepo(`${dir}/project`, { ".gitignore": "node_modules/\n" });
      await lifeline(dir, root, "init", "--scope", "project");
      assert.equal(await Deno.readTextFile(`${root}/.gitignore`), "node_modules/\n");
      const exclude = await Deno.readTextFile(`${root}/.git/info/exclude`);
      const asked = await lifeline(
        dir,
        root,
        "init",
        "--scope",
        "project",
        "--gitignore",
        "--json",
      );
      assert.equal(JSON.parse(asked.stdout).exclude.file, `${root}/.gitignore`);
      const text = await Deno.readTextFile(`${root}/.gitignore`);
      assert.match(text, /^node_modules\/\n# lifeline: begin[^\n]*\n\/sessions\/\*\/heartbeat\n/);
      assert.equal(await Deno.readTextFile(`${root}/.git/info/exclude`), exclude, "not both");
    });
  },
});

Deno.test({
  name: "an exclude file that is a link is not written through; init still adds the hooks",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const root = await plainRepo(`${dir}/project`);
      await Deno.writeTextFile(`${dir}/elsewhere`, "keep me\n");
      await Deno.remove(`${root}/.git/info/exclude`);
      await Deno.symlink(`${dir}/elsewhere`, `${root}/.git/info/exclude`);
      const result = await lifeline(dir, root, "init", "--scope", "project");
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^Wrote .*\.claude\/settings\.json\.$/m);
      assert.match(
        result.stdout,
        /^Could not keep lifeline's per-session state out of git: .*exclude/m,
      );
      assert.equal(await Deno.readTextFile(`${dir}/elsewhere`), "keep me\n");
    });
  },
});

Deno.test({
  name: "outside git, init writes no exclude and says nothing of one",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await Deno.mkdir(`${dir}/project`);
      const result = await lifeline(dir, `${dir}/project`, "init", "--scope", "project", "--json");
      assert.equal(JSON.parse(result.stdout).exclude, null);
      await assert.rejects(Deno.stat(`${dir}/project/.git`), Deno.errors.NotFound);
    });
  },
});

Deno.test({
  name: "doctor warns when lifeline's state is tracked or would not be ignored",
  ignore: IGNORE,
  async fn(t) {
    await withTempDir(async (dir) => {
      const root = await plainRepo(`${dir}/project`);
      const gitCheck = async () => {
        const out = JSON.parse((await lifeline(dir, root, "doctor", "--json")).stdout);
        return out.checks.filter((c: { name: string }) => c.name === "git");
      };
      await t.step("before init: not ignored", async () => {
        const [check] = await gitCheck();
        assert.equal(check.status, "warn");
        assert.match(check.message, /not ignored by git \(sessions\/x\/heartbeat, /);
        assert.match(check.fix, /run `lifeline init`/);
      });
      await t.step("after init: ok", async () => {
        await lifeline(dir, root, "init", "--scope", "project");
        const [check] = await gitCheck();
        assert.equal(check.status, "ok", check.message);
      });
      await t.step("a heartbeat committed by an agent: tracked", async () => {
        await writeState(root);
        await git(root, "add", "-f", "sessions/s1/heartbeat");
        await git(root, "commit", "-qm", "oops");
        const [check] = await gitCheck();
        assert.equal(check.status, "warn");
        assert.match(check.message, /git tracks lifeline's state: sessions\/s1\/heartbeat$/);
        assert.match(check.fix, /git rm -r --cached/);
      });
    });
  },
});
