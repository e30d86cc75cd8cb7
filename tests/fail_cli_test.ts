// What the user of `fail …` sees: exit codes that agree with the JSON, messages that print the
// exact command to run, --dry-run and --no-rollback, the iteration budget in status and doctor,
// fail reset, fail list and fail prune, English headings, and help for the terms it uses.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { backupRefs, failHandle, handle, lifeline, setUp, state } from "./helpers/harness.ts";
import { exactTree } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

const fail = (dir: string, task: string, skill: string, error: string, ...extra: string[]) =>
  failHandle(dir, [task, skill, error], ...extra);

/** A harness whose budget is `max` iterations (10 per handling), as another tool wrote it. */
async function spendable(repo: string, max: number): Promise<void> {
  const counter = `current_iteration: 0\nmax_iterations: ${max}\n`;
  await Deno.writeTextFile(`${repo}/.EnjoyHarness/ITERATION_COUNTER.md`, counter);
  await Deno.remove(`${repo}/.EnjoyHarness/handle-failure.json`); // imported from the markdown
}

const json = async (p: Promise<{ code: number; stdout: string }>) => {
  const r = await p;
  return { code: r.code, ...JSON.parse(r.stdout) };
};

Deno.test({
  name: "exit code and --json agree: exit 10 exactly when stop is true, escalate says who fixes it",
  ignore: IGNORE,
  async fn(t) {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      await spendable(repo, 60);
      const rows: [string, () => Promise<Record<string, unknown>>, number, boolean][] = [
        [
          "a code error, first time: retry",
          () => json(fail(dir, "A", "s1", "SyntaxError", "--json")),
          0,
          false,
        ],
        [
          "an architecture error: stop, fixed without a person",
          () => json(fail(dir, "B", "s2", "违反分层架构", "--json")),
          10,
          false,
        ],
        [
          "the third failure of a task: stop and escalate",
          async () => {
            await fail(dir, "C", "s3", "TypeError");
            await fail(dir, "C", "s3", "TypeError");
            return await json(fail(dir, "C", "s3", "TypeError", "--json"));
          },
          10,
          true,
        ],
        [
          "a failure while the breaker is open",
          () => json(fail(dir, "C", "s3", "TypeError", "--json")),
          10,
          true,
        ],
        [
          "a success",
          () =>
            json(
              lifeline(dir, [
                "fail",
                "handle",
                "--success",
                "--task",
                "A",
                "--skill",
                "s1",
                "--json",
              ]),
            ),
          0,
          false,
        ],
        [
          "the global budget spent",
          async () => {
            await fail(dir, "D", "s4", "timeout");
            return await json(fail(dir, "E", "s5", "timeout", "--json"));
          },
          10,
          true,
        ],
      ];
      for (const [name, run, code, escalate] of rows) {
        await t.step(name, async () => {
          const out = await run();
          assert.equal(out.code, code);
          assert.equal(out.exit_code, code);
          assert.equal(out.stop, code === 10);
          assert.equal(out.escalate, escalate);
        });
      }
    });
  },
});

Deno.test({
  name: "an open breaker's message prints the exact command that closes it, and it works",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await setUp(dir);
      for (let i = 0; i < 3; i++) await fail(dir, "T3", "spawn", "TypeError: agent is undefined");
      const open = await fail(dir, "T3", "spawn", "TypeError again");
      assert.equal(open.code, 10);
      const command = /`(lifeline fail handle --success --task T3 --skill spawn)`/.exec(
        open.stdout,
      );
      assert.ok(command, open.stdout);
      assert.match(open.stdout, /`lifeline fail reset --task T3`/);
      const closed = await lifeline(dir, command[1]!.split(" ").slice(1));
      assert.equal(closed.code, 0, closed.stderr);
      assert.match(closed.stdout, /breaker closed/);
    });
  },
});

Deno.test({
  name: "the global iteration budget: status and doctor show it, fail reset --global gives it back",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      await spendable(repo, 20);
      await fail(dir, "G1", "s", "timeout");
      await fail(dir, "G2", "s2", "timeout");
      const spent = await fail(dir, "G3", "s3", "timeout");
      assert.equal(spent.code, 10);
      assert.match(
        spent.stdout,
        /20\/20 iterations used.*reset it with `lifeline fail reset --global`/,
      );
      const status = await lifeline(dir, ["status"]);
      assert.match(
        status.stdout,
        /iteration budget: 20\/20 \(global breaker open: every task stops\)/,
      );
      const doctor = await lifeline(dir, ["doctor", "--json"]);
      const check = JSON.parse(doctor.stdout).checks.find((c: { name: string }) =>
        c.name === "harness"
      );
      assert.equal(check.status, "warn");
      assert.match(check.message, /iteration budget 20\/20: global breaker open/);
      const reset = await lifeline(dir, ["fail", "reset", "--global"]);
      assert.equal(reset.code, 0, reset.stderr);
      assert.match(reset.stdout, /20\/20 → 0\/20/);
      assert.equal((await fail(dir, "G3", "s3", "timeout")).code, 0);
      assert.match(
        await Deno.readTextFile(`${repo}/.EnjoyHarness/EVENT_LOG.md`),
        /\| RESET \| harness-handle-failure \| 全局迭代计数已重置 \| SUCCESS/,
      );
    });
  },
});

Deno.test({
  name: "fail reset --task closes the breaker and clears the task's and its skill's counts",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      for (let i = 0; i < 3; i++) await fail(dir, "R1", "lint", "TypeError");
      const reset = await json(lifeline(dir, ["fail", "reset", "--task", "R1", "--json"]));
      assert.deepEqual([reset.breaker_closed, reset.skill_cleared], [true, "lint"]);
      await assert.rejects(
        Deno.lstat(`${repo}/.EnjoyHarness/.circuit-breaker-task-R1`),
        Deno.errors.NotFound,
      );
      const s = await state(repo);
      assert.deepEqual([s.tasks.R1, s.skills.lint], [undefined, undefined]);
      const next = await json(fail(dir, "R1", "lint", "TypeError", "--json"));
      assert.deepEqual(next.count, { skill: 1, task: 1, max: 3 });
      assert.equal((await lifeline(dir, ["fail", "reset"])).code, 64);
      assert.equal((await lifeline(dir, ["fail", "reset", "--task", "../x"])).code, 64);
    });
  },
});

Deno.test({
  name: "--dry-run prints the decision and exactly what a rollback would do, and writes nothing",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "README.md": "hello\n", "config.local": "stable\n" });
      await git(repo, "rm", "--cached", "--quiet", "config.local");
      await git(repo, "commit", "--quiet", "-m", "untrack config.local");
      await Deno.writeTextFile(`${repo}/README.md`, "changed\n");
      await Deno.writeTextFile(`${repo}/gone.txt`, "tracked later\n");
      await git(repo, "add", "gone.txt");
      const before = await exactTree(dir);
      const refs = await git(repo, "for-each-ref");
      const args = [
        "fail",
        "handle",
        "--task",
        "D1",
        "--skill",
        "s",
        "--error",
        "x",
        "--unstable",
        "--dry-run",
      ];
      const text = await lifeline(dir, args);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^dry run: nothing was written\n/);
      assert.match(
        text.stdout,
        /rollback: would go to [0-9a-f]{12} \(stable-1\) for: the change left the system unstable/,
      );
      assert.match(
        text.stdout,
        /scope: the whole repository; the branch moves \(git reset --hard\)/,
      );
      assert.match(text.stdout, /reverts: README\.md\n/);
      assert.match(text.stdout, /deletes: gone\.txt/);
      assert.match(text.stdout, /overwrites untracked: config\.local/);
      assert.match(text.stdout, /backup would hold: 3 files, \d+ bytes/);
      const plan = (await json(lifeline(dir, [...args, "--json"]))).rollback.plan;
      assert.deepEqual([plan.reverts, plan.deletes, plan.untracked], [
        ["README.md"],
        ["gone.txt"],
        ["config.local"],
      ]);
      assert.deepEqual(await exactTree(dir), before, "not a byte changed, the git directory aside");
      assert.equal(await git(repo, "for-each-ref"), refs);
      await assert.rejects(Deno.lstat(`${repo}/.git/lifeline`), Deno.errors.NotFound);
    });
  },
});

Deno.test({
  name: "--no-rollback records and decides, and leaves the work tree as it is",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      await Deno.writeTextFile(`${repo}/README.md`, "UI calls the repo layer\n");
      await commitAll(repo, "layering violation");
      const head = await git(repo, "rev-parse", "HEAD");
      const out = await json(
        fail(dir, "N1", "s", "违反分层架构 - UI层直接调用Repo层", "--no-rollback", "--json"),
      );
      assert.deepEqual([out.rollback.needed, out.rollback.status, out.strategy], [
        true,
        "skipped",
        "C",
      ]);
      assert.equal(await git(repo, "rev-parse", "HEAD"), head);
      assert.equal((await state(repo)).tasks.N1, 1);
      assert.match(
        await Deno.readTextFile(`${repo}/.trace/FAILURE_REPORT_N1.md`),
        /- \[x\] 回滚决策: 需要, 但 --no-rollback\n/,
      );
      assert.deepEqual(await backupRefs(repo), []);
    });
  },
});

Deno.test({
  name: "a refusal is said once: `rollback: refused: <why> (<what to do>)`",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      await git(repo, "tag", "-d", "stable-1");
      const out = await fail(dir, "N2", "s", "x", "--unstable");
      assert.match(
        out.stdout,
        /\n {2}rollback: refused: there is no stable commit \(no refs\/worktree\/lifeline\/stable, no tag matching "stable\*"\) \(mark one with `git tag stable-1 <commit>`/,
      );
      assert.doesNotMatch(out.stdout, /refused: rollback refused/);
    });
  },
});

Deno.test({
  name: "a trailing / on --root keeps the paths it prints whole",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await setUp(dir);
      for (let i = 0; i < 3; i++) await fail(dir, "S1", "s", "TypeError");
      const out = await json(
        lifeline(dir, [
          "fail",
          "handle",
          "--root",
          `${dir}/repo/`,
          "--task",
          "S1",
          "--skill",
          "s",
          "--error",
          "x",
          "--json",
        ]),
      );
      assert.equal(out.breaker_file, ".EnjoyHarness/.circuit-breaker-task-S1");
      assert.match(out.next_step, /--root \S+\/repo\/`/);
    });
  },
});

Deno.test({
  name: 'harness.language "en": the same records with English headings',
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await Deno.mkdir(`${dir}/repo/.lifeline`, { recursive: true });
      await Deno.writeTextFile(
        `${dir}/repo/.lifeline/config.json`,
        '{"harness": {"language": "en"}}',
      );
      const repo = await setUp(dir);
      await Deno.writeTextFile(`${repo}/.lifeline/config.json`, '{"harness": {"language": "en"}}');
      for (let i = 0; i < 3; i++) await fail(dir, "L1", "build", "SyntaxError");
      const trace = await Deno.readTextFile(`${repo}/.trace/ERROR_TRACE.md`);
      assert.match(
        trace,
        /## Failure record #3\n\n### Basic information\n- Time: \S+\n- Task ID: L1\n- Skill: build\n- Error type: code error\n/,
      );
      const report = await Deno.readTextFile(`${repo}/.trace/FAILURE_REPORT_L1.md`);
      assert.match(report, /# Failure handling report\n\n## Summary\n/);
      assert.match(report, /## Circuit breakers\n- Task breaker: triggered\n/);
      const breaker = await Deno.readTextFile(`${repo}/.EnjoyHarness/.circuit-breaker-task-L1`);
      assert.match(
        breaker,
        /^---\ntriggered_at: \S+\ntrigger_type: TASK_LEVEL\ntask_id: L1\n[\s\S]*# Task circuit breaker triggered\n/,
      );
      assert.match(
        await Deno.readTextFile(`${repo}/.EnjoyHarness/GLOBAL_STATE.md`),
        /## Skill error counts\n- build: 3\/3\n/,
      );
      assert.match(
        await Deno.readTextFile(`${repo}/.EnjoyHarness/EVENT_LOG.md`),
        /\| CIRCUIT_BREAKER_TRIGGERED \| harness-handle-failure \| task breaker \(task: L1, errors: 3\/3\) \| CRITICAL\n/,
      );
    });
  },
});

Deno.test({
  name: "fail handle --help explains its terms, its strategies and which decisions stop the loop",
  ignore: IGNORE,
  async fn() {
    const help = (await runHelp()).stdout;
    for (
      const term of [
        "harness-diagnose-and-improve",
        "harness-enforce-architecture-guardrails",
        "harness-escalate-to-human",
      ]
    ) {
      assert.match(help, new RegExp(`\\n {2}${term}: \\w.{20,}`), term);
    }
    assert.match(help, /\n {2}A {2}fix and retry/);
    assert.match(
      help,
      /10 stop retrying this task\n\(strategy C, the task's breaker open, or the global iteration budget spent\)/,
    );
    assert.match(help, /"stop" is true exactly when the exit code is 10/);
  },
});

async function runHelp() {
  return await withTempDir((dir) => lifeline(dir, ["fail", "handle", "--help"], dir));
}

Deno.test({
  name: "fail list shows the backups; fail prune --keep / --older-than removes old ones",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      for (let i = 1; i <= 3; i++) {
        await Deno.writeTextFile(`${repo}/README.md`, `work ${i}\n`);
        await handle(dir, `P${i}`);
      }
      const list = await lifeline(dir, ["fail", "list"]);
      assert.equal(list.code, 0, list.stderr);
      assert.match(
        list.stdout,
        /^refs\/lifeline\/backups\/P3-\S+ {2}\S+ {2}task P3 {2}1 files, 7 B \(7 B new\) {2}scope \.\n/,
      );
      assert.match(
        list.stdout,
        /\n3 backups, 21 B new of 1024\.0 MB allowed \(breaker\.maxBackupsMB\)\n$/,
      );
      const dry = await json(
        lifeline(dir, ["fail", "prune", "--keep", "1", "--dry-run", "--json"]),
      );
      assert.equal(dry.removed.length, 2);
      assert.equal((await backupRefs(repo)).length, 3, "a dry run deletes nothing");
      const pruned = await json(lifeline(dir, ["fail", "prune", "--keep", "1", "--json"]));
      assert.deepEqual(pruned.kept, 1);
      assert.deepEqual(await backupRefs(repo), [
        (await json(lifeline(dir, ["fail", "list", "--json"]))).backups[0].ref,
      ]);
      assert.match((await backupRefs(repo))[0]!, /P3-/);
      assert.equal(
        (await json(lifeline(dir, ["fail", "prune", "--older-than", "30d", "--json"]))).removed
          .length,
        0,
      );
      assert.equal((await lifeline(dir, ["fail", "prune"])).code, 64);
      assert.equal((await lifeline(dir, ["fail", "prune", "--older-than", "soon"])).code, 64);
      const doctor = JSON.parse((await lifeline(dir, ["doctor", "--json"])).stdout);
      const backups = doctor.checks.find((c: { name: string }) => c.name === "backups");
      assert.match(
        backups.message,
        /^1 rollback backups add 7 B \(bound 1024\.0 MB, breaker\.maxBackupsMB\)$/,
      );
    });
  },
});
