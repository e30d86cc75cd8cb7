// `lifeline fail init|handle|restore` on real git repositories: the specification's five
// scenarios, rollback without loss, and the refusals.
import assert from "node:assert/strict";
import { classifyError } from "../lib/harness/classify_policy.ts";
import { parseEventLine } from "../commands/fail_handle.ts";
import { commitAll, git, makeRepo, treeSnapshot } from "./helpers/git_repo.ts";
import { runLifeline } from "./helpers/lifeline.ts";
import { handleJson, lifeline, setUp } from "./helpers/harness.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

const handle = (dir: string, task: string, skill: string, error: string, ...extra: string[]) =>
  handleJson(dir, [task, skill, error], ...extra);

const read = (repo: string, path: string) => Deno.readTextFile(`${repo}/${path}`);
const state = async (repo: string) =>
  JSON.parse(await read(repo, ".EnjoyHarness/handle-failure.json"));

Deno.test({
  name:
    "fail init creates the harness, marks the breaker enabled, and changes nothing when run again",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      assert.deepEqual(await listDir(`${repo}/.EnjoyHarness`), [
        "EVENT_LOG.md",
        "EXECUTION_CONTRACT.md",
        "GLOBAL_STATE.md",
        "ITERATION_COUNTER.md",
        "SKILL_REGISTRY.md",
        "handle-failure.json",
      ]);
      assert.match(
        await read(repo, ".EnjoyHarness/ITERATION_COUNTER.md"),
        /current_iteration: 0\nmax_iterations: 100/,
      );
      assert.match(
        await read(repo, ".EnjoyHarness/EXECUTION_CONTRACT.md"),
        /human_escalation_policy: true_blockers_only/,
      );
      assert.match(
        await read(repo, ".EnjoyHarness/SKILL_REGISTRY.md"),
        /- \[x\] harness-enable-circuit-breaker/,
      );
      assert.ok(await read(repo, ".trace/ERROR_TRACE.md"));
      const before = await treeSnapshot(repo, [".git"]);
      const again = await lifeline(dir, ["fail", "init", "--json"]);
      assert.deepEqual(JSON.parse(again.stdout).created, []);
      assert.deepEqual(await treeSnapshot(repo, [".git"]), before);
    });
  },
});

Deno.test({
  name: "scenario 1: a code error at count 1 becomes 2 and gets strategy A",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      await handle(dir, "T1", "harness-validate-output", "Go编译错误 - 未定义的变量 total");
      const second = await handle(
        dir,
        "T1",
        "harness-validate-output",
        "Go编译错误 - 未定义的变量 total",
      );
      assert.equal(second.type, "code");
      assert.deepEqual(second.count, { skill: 2, task: 2, max: 3 });
      assert.equal(second.strategy, "A");
      assert.equal(second.code, 0, "retry");
      assert.match(second.next_step, /harness-diagnose-and-improve/);
      assert.match(
        await read(repo, ".EnjoyHarness/GLOBAL_STATE.md"),
        /## 技能错误计数\n- harness-validate-output: 2\/3\n/,
      );
      const trace = await read(repo, ".trace/ERROR_TRACE.md");
      assert.match(trace, /## 失败记录 #1\n/);
      assert.match(
        trace,
        /## 失败记录 #2\n\n### 基本信息\n- 时间: \S+\n- 任务ID: T1\n- 技能: harness-validate-output\n- 错误类型: 代码错误 \(code\)\n\n### 错误详情\nGo编译错误 - 未定义的变量 total\n\n### 上下文\n- 当前迭代: 20\/100\n- 当前Token消耗: unknown\n- 错误计数: 2\/3\n\n### 影响范围\n/,
      );
      assert.match(
        await read(repo, ".EnjoyHarness/ITERATION_COUNTER.md"),
        /current_iteration: 20\n/,
      );
      assert.match(
        await read(repo, ".EnjoyHarness/SKILL_REGISTRY.md"),
        /- \[x\] harness-handle-failure - 失败处理技能 ✅/,
      );
      assert.match(
        await read(repo, ".trace/FAILURE_REPORT_T1.md"),
        /^---\ngenerated_at: \S+\ntask_id: T1\nstatus: FAILED\n---\n\n# 失败处理报告/,
      );
    });
  },
});

Deno.test({
  name: "scenario 2: an architecture error gets a rollback and no retry",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "src/ui.ts": "export const ui = 1;\n" });
      const stable = await git(repo, "rev-parse", "HEAD");
      await Deno.writeTextFile(`${repo}/src/ui.ts`, "import { repo } from './repo.ts';\n");
      await commitAll(repo, "UI talks to the repo layer");
      await Deno.writeTextFile(`${repo}/src/wip.ts`, "work in progress\n");
      const out = await handle(
        dir,
        "T2",
        "harness-validate-output",
        "违反分层架构 - UI层直接调用Repo层",
      );
      assert.equal(out.type, "architecture");
      assert.equal(out.rule, "layering violation");
      assert.equal(out.rollback.done, true);
      assert.equal(out.strategy, "C");
      assert.equal(out.code, 10, "stop: no retry");
      assert.equal(out.escalate, false, "true_blockers_only: an architecture fix is not a blocker");
      assert.match(out.next_step, /harness-enforce-architecture-guardrails/);
      assert.equal(await git(repo, "rev-parse", "HEAD"), stable);
      assert.equal(await read(repo, "src/ui.ts"), "export const ui = 1;\n");
      assert.match(out.rollback.backup, /^refs\/lifeline\/backups\/T2-\d{8}T\d{6}Z$/);
      assert.equal(out.rollback.restore, `lifeline fail restore ${out.rollback.backup}`);
      assert.match(
        await read(repo, ".EnjoyHarness/EVENT_LOG.md"),
        new RegExp(
          `\\| ROLLBACK \\| harness-handle-failure \\| 回滚到 ${stable.slice(0, 12)} \\| SUCCESS`,
        ),
      );
      assert.match(
        await read(repo, ".trace/FAILURE_REPORT_T2.md"),
        /- 是否回滚: 是\n- 回滚到: [0-9a-f]{12} \(stable-1\)\n- 暂存备份: refs\/lifeline\/backups\/T2-/,
      );
    });
  },
});

Deno.test({
  name: "a repository without a git identity is still backed up and rolled back",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "src/ui.ts": "export const ui = 1;\n" });
      await git(repo, "config", "--unset", "user.email");
      await git(repo, "config", "--unset", "user.name");
      // Never guess an identity from the host name, so this fails the same on every machine.
      await git(repo, "config", "user.useConfigOnly", "true");
      await Deno.writeTextFile(`${repo}/src/ui.ts`, "work in progress\n");
      const out = await handle(dir, "T2", "layering", "违反分层架构 - UI层直接调用Repo层");
      assert.equal(out.rollback.done, true);
      assert.equal(await read(repo, "src/ui.ts"), "export const ui = 1;\n");
      assert.equal(
        await git(repo, "log", "-1", "--format=%an <%ae>", out.rollback.backup),
        "lifeline <lifeline@localhost>",
      );
      const restore = await lifeline(dir, ["fail", "restore", out.rollback.backup]);
      assert.equal(restore.code, 0, restore.stderr);
      assert.equal(await read(repo, "src/ui.ts"), "work in progress\n");
    });
  },
});

Deno.test({
  name: "scenario 3: a third failure writes the breaker file and a CRITICAL event, and escalates",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      for (let i = 0; i < 2; i++) {
        await handle(
          dir,
          "T3",
          "harness-spawn-subharness-agent",
          "subagent crashed: TypeError x is undefined",
        );
      }
      const third = await handle(
        dir,
        "T3",
        "harness-spawn-subharness-agent",
        "subagent crashed: TypeError x is undefined",
      );
      assert.equal(third.breaker, "opened");
      assert.equal(third.escalate, true);
      assert.equal(third.code, 10);
      const breaker = await read(repo, ".EnjoyHarness/.circuit-breaker-task-T3");
      assert.match(
        breaker,
        /^---\ntriggered_at: \S+\ntrigger_type: TASK_LEVEL\ntask_id: T3\nskill_name: harness-spawn-subharness-agent\nerror_count: 3\nmax_retries: 3\n---\n\n# 任务级熔断触发\n\n## 触发原因\n同一任务失败次数达到阈值：3\/3\n/,
      );
      assert.match(
        await read(repo, ".EnjoyHarness/EVENT_LOG.md"),
        /\| CIRCUIT_BREAKER_TRIGGERED \| harness-handle-failure \| 任务级熔断 \(任务: T3, 错误: 3\/3\) \| CRITICAL\n/,
      );
      // While it is open, the task's failures are answered at once and not counted.
      const fourth = await handle(dir, "T3", "harness-spawn-subharness-agent", "again");
      assert.equal(fourth.breaker, "open");
      assert.equal(fourth.code, 10);
      assert.equal((await state(repo)).tasks.T3, 3);
    });
  },
});

Deno.test({
  name: "scenario 4: a retry that succeeds clears the counts and marks HEAD stable",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      const first = await handle(
        dir,
        "T4",
        "harness-validate-output",
        "SyntaxError: Unexpected token '}'",
      );
      assert.equal(first.strategy, "A");
      const ok = await lifeline(dir, [
        "fail",
        "handle",
        "--success",
        "--task",
        "T4",
        "--skill",
        "harness-validate-output",
        "--json",
      ]);
      assert.equal(ok.code, 0);
      const result = JSON.parse(ok.stdout);
      assert.equal(result.counts_cleared, true);
      assert.equal(result.stable, await git(repo, "rev-parse", "HEAD"));
      assert.equal(await git(repo, "rev-parse", "refs/worktree/lifeline/stable"), result.stable);
      const s = await state(repo);
      assert.deepEqual([s.skills, s.tasks], [{}, {}]);
      assert.match(await read(repo, ".EnjoyHarness/GLOBAL_STATE.md"), /## 技能错误计数\n\(无\)\n/);
      assert.match(
        await read(repo, ".EnjoyHarness/EVENT_LOG.md"),
        /\| RETRY \| harness-handle-failure \| T4 重试成功, 计数已清除 \| SUCCESS/,
      );
    });
  },
});

Deno.test({
  name: "scenario 5: three failures of mixed types open the breaker and produce the report",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      const a = await handle(dir, "T5", "build", "error TS2304: Cannot find name 'cart'");
      const b = await handle(dir, "T5", "build", "ReferenceError: total is not defined");
      const c = await handle(dir, "T5", "build", "Error: EACCES: permission denied, open '/etc/x'");
      assert.deepEqual([a.type, b.type, c.type], ["code", "code", "process"]);
      assert.deepEqual(c.count, { skill: 3, task: 3, max: 3 });
      assert.equal(c.breaker, "opened");
      assert.equal(c.strategy, "C");
      const report = await read(repo, ".trace/FAILURE_REPORT_T5.md");
      assert.match(
        report,
        /## 处理措施\n- \[x\] 错误分类完成\n- \[x\] 失败上下文已记录\n- \[x\] 错误计数已更新: 3\/3\n/,
      );
      assert.match(report, /## 熔断状态\n- 任务级熔断: 触发\n/);
      assert.match(
        report,
        /## 下一步建议\n1\. Stop this task: its circuit breaker is open\.\n2\. This is a true blocker: trigger harness-escalate-to-human/,
      );
      assert.ok(await Deno.stat(`${repo}/.EnjoyHarness/.circuit-breaker-task-T5`));
    });
  },
});

Deno.test({
  name:
    "rollback then restore is lossless: staged, unstaged, untracked, binary, deleted, renamed, exec bit",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, {
        "keep.txt": "keep\n",
        "edit.txt": "one\n",
        "stage.txt": "s1\n",
        "gone.txt": "bye\n",
        "old-name.txt": "renamed content\n",
        "run.sh": "#!/bin/sh\necho hi\n",
        ".gitignore": "*.log\n",
      });
      await Deno.writeTextFile(`${repo}/ignored.log`, "ignored before\n");
      // A committed change after the stable tag, so the rollback moves HEAD.
      await Deno.writeTextFile(`${repo}/keep.txt`, "keep, committed later\n");
      await commitAll(repo, "later work");
      // Every kind of uncommitted change.
      await Deno.writeTextFile(`${repo}/edit.txt`, "one\ntwo (unstaged)\n");
      await Deno.writeTextFile(`${repo}/stage.txt`, "s1\ns2 (staged)\n");
      await git(repo, "add", "stage.txt");
      await Deno.writeTextFile(`${repo}/stage.txt`, "s1\ns2 (staged)\ns3 (and unstaged on top)\n");
      await Deno.writeTextFile(`${repo}/untracked.txt`, "new file\n");
      await Deno.writeFile(`${repo}/blob.bin`, new Uint8Array([0, 1, 2, 255, 254, 0, 10, 13]));
      await git(repo, "rm", "--quiet", "gone.txt");
      await git(repo, "mv", "old-name.txt", "new-name.txt");
      await Deno.chmod(`${repo}/run.sh`, 0o755);
      const before = await treeSnapshot(repo);
      const stagedBefore = await git(repo, "diff", "--cached", "--name-status");
      const statusBefore = await git(repo, "status", "--porcelain");

      const out = await handle(dir, "T6", "impl", "flaky change", "--unstable");
      assert.equal(out.rollback.done, true);
      assert.equal(
        await read(repo, "keep.txt"),
        "keep\n",
        "tracked files are at the stable commit",
      );
      assert.equal(
        await read(repo, "ignored.log"),
        "ignored before\n",
        "ignored files are untouched",
      );
      await Deno.writeTextFile(`${repo}/ignored.log`, "ignored, written after the rollback\n");

      const restore = await lifeline(dir, ["fail", "restore", out.rollback.backup]);
      assert.equal(restore.code, 0, restore.stderr);
      const after = await treeSnapshot(repo);
      delete before["ignored.log"];
      assert.equal(after["ignored.log"]?.startsWith("-:"), true);
      delete after["ignored.log"];
      assert.deepEqual(after, before, "byte-identical, modes included");
      assert.equal(
        await git(repo, "diff", "--cached", "--name-status"),
        stagedBefore,
        "the index too",
      );
      assert.equal(await git(repo, "status", "--porcelain"), statusBefore);
      assert.equal(await read(repo, "ignored.log"), "ignored, written after the rollback\n");
    });
  },
});

Deno.test({
  name: "lifeline's own state is never rolled back, even when git tracks it",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      await git(repo, "add", "-f", ".EnjoyHarness", ".trace");
      await commitAll(repo, "track the harness too");
      await Deno.writeTextFile(`${repo}/README.md`, "changed\n");
      await handle(dir, "T7", "impl", "SyntaxError one");
      const out = await handle(dir, "T7", "impl", "SyntaxError two");
      assert.equal(out.rollback.done, true);
      assert.equal((await state(repo)).tasks.T7, 2, "the record of the rollback survived it");
      assert.match(await read(repo, ".EnjoyHarness/EVENT_LOG.md"), /ROLLBACK/);
      const restore = await lifeline(dir, ["fail", "restore", out.rollback.backup]);
      assert.equal(restore.code, 0, restore.stderr);
      assert.equal(
        (await state(repo)).tasks.T7,
        2,
        "and the restore did not bring back older counts",
      );
      assert.equal(await read(repo, "README.md"), "changed\n");
    });
  },
});

Deno.test({
  name: "restore refuses to overwrite newer changes unless --force, which saves them first",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      await Deno.writeTextFile(`${repo}/README.md`, "v2\n");
      const out = await handle(dir, "T8", "impl", "crash", "--unstable");
      await Deno.writeTextFile(`${repo}/README.md`, "v3, written after the rollback\n");
      const refused = await lifeline(dir, ["fail", "restore", out.rollback.backup]);
      assert.equal(refused.code, 1);
      assert.match(
        refused.stderr,
        /error: what changed since the rollback would be overwritten: README\.md\n/,
      );
      assert.equal(await read(repo, "README.md"), "v3, written after the rollback\n");
      const forced = await lifeline(dir, [
        "fail",
        "restore",
        out.rollback.backup,
        "--force",
        "--json",
      ]);
      assert.equal(forced.code, 0, forced.stderr);
      const saved = JSON.parse(forced.stdout).saved_first;
      assert.match(saved, /^refs\/lifeline\/backups\/before-restore-/);
      assert.equal(await read(repo, "README.md"), "v2\n");
      assert.equal(await git(repo, "show", `${saved}:README.md`), "v3, written after the rollback");
    });
  },
});

Deno.test({
  name:
    "refusals: a dirty submodule, a merge in progress, no stable commit, a stable commit off the branch",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      // No stable commit.
      const repo = await setUp(dir);
      await git(repo, "tag", "-d", "stable-1");
      const none = await handle(dir, "R1", "impl", "x", "--unstable");
      assert.equal(none.rollback.done, false);
      assert.match(none.rollback.refused, /no stable commit/);

      // Not an ancestor of HEAD.
      await git(repo, "checkout", "--quiet", "-b", "side");
      await Deno.writeTextFile(`${repo}/side.txt`, "side\n");
      await commitAll(repo, "side work");
      await git(repo, "tag", "stable-side");
      await git(repo, "checkout", "--quiet", "main");
      const off = await handle(dir, "R2", "impl", "x", "--unstable");
      assert.match(off.rollback.refused, /is not an ancestor of HEAD/);
      await git(repo, "tag", "-d", "stable-side");
      await git(repo, "tag", "stable-2", "main");

      // A merge in progress.
      await git(repo, "checkout", "--quiet", "-b", "other");
      await Deno.writeTextFile(`${repo}/README.md`, "other\n");
      await commitAll(repo, "other");
      await git(repo, "checkout", "--quiet", "main");
      await Deno.writeTextFile(`${repo}/README.md`, "main\n");
      await commitAll(repo, "main");
      await git(repo, "merge", "--quiet", "other").catch(() => {}); // conflicts: stays mid-merge
      const merging = await handle(dir, "R3", "impl", "x", "--unstable");
      assert.match(merging.rollback.refused, /a merge is in progress/);
      await git(repo, "merge", "--abort");

      // A dirty submodule.
      const sub = await makeRepo(`${dir}/sub`, { "lib.txt": "lib\n" });
      await git(
        repo,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "--quiet",
        "add",
        sub,
        "vendor/sub",
      );
      await commitAll(repo, "add submodule");
      await git(repo, "tag", "-f", "stable-3");
      await Deno.writeTextFile(`${repo}/vendor/sub/lib.txt`, "changed inside\n");
      const dirty = await handle(dir, "R4", "impl", "x", "--unstable");
      assert.match(dirty.rollback.refused, /submodule vendor\/sub has changes of its own/);
      assert.equal(await read(repo, "vendor/sub/lib.txt"), "changed inside\n");
    });
  },
});

Deno.test({
  name: "20 concurrent failures of one task leave exact counts and exactly one breaker file",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await Deno.mkdir(`${dir}/repo`);
      assert.equal((await lifeline(dir, ["fail", "init"])).code, 0);
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          runLifeline([
            "fail",
            "handle",
            "--task",
            "C1",
            "--skill",
            "s",
            "--error",
            "timeout waiting for db",
            "--json",
          ], {
            env: { HOME: `${dir}/home` },
            cwd: `${dir}/repo`,
            timeoutMs: 120_000,
          })),
      );
      for (const r of results) assert.ok(r.code === 0 || r.code === 10, r.stderr);
      const repo = `${dir}/repo`;
      const s = await state(repo);
      assert.equal(s.tasks.C1, 3);
      assert.equal(s.skills.s, 3);
      const names = await listDir(`${repo}/.EnjoyHarness`);
      assert.equal(names.filter((n) => n.startsWith(".circuit-breaker-task-")).length, 1);
      assert.equal((await read(repo, ".trace/ERROR_TRACE.md")).match(/## 失败记录 #/g)?.length, 3);
      const outcomes = results.map((r) => JSON.parse(r.stdout));
      assert.equal(outcomes.filter((o) => o.breaker === "open").length, 17);
    });
  },
});

Deno.test({
  name: "malformed events and bad task ids are usage errors that write nothing",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      const before = await treeSnapshot(repo, [".git"]);
      const cases: string[][] = [
        ["fail", "handle", "--task", "../x", "--skill", "s", "--error", "e"],
        ["fail", "handle", "--task", "a/b", "--skill", "s", "--error", "e"],
        ["fail", "handle", "--task", "t", "--skill", "s"],
        ["fail", "handle", "--task", "t", "--skill", "s", "--error", "e", "--type", "cosmic"],
        ["fail", "handle", "--event", "not an event"],
        [
          "fail",
          "handle",
          "--event",
          "2026-11-30T10:00:00Z | FAILURE | skill | no-dash-here | FAILURE",
        ],
        ["fail", "handle", "--event", "yesterday | FAILURE | s | t - d | FAILURE"],
        ["fail", "handle", "--event", "2026-11-30T10:00:00Z | FAILURE | s | ../x - d | FAILURE"],
      ];
      for (const args of cases) {
        const result = await lifeline(dir, args);
        assert.equal(result.code, 64, `${args.join(" ")}: ${result.stderr}`);
        assert.match(result.stderr, /^Usage: lifeline fail handle/);
        assert.match(result.stderr, /error: /);
      }
      const badStdin = await lifeline(dir, ["fail", "handle"], `${dir}/repo`, "{not json");
      assert.equal(badStdin.code, 64);
      assert.deepEqual(await treeSnapshot(repo, [".git"]), before);
    });
  },
});

Deno.test({
  name: "the event line and JSON on stdin are accepted like the flags",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir);
      const event = await lifeline(dir, [
        "fail",
        "handle",
        "--json",
        "--event",
        "2026-11-30T10:00:00+08:00 | FAILURE | harness-validate-output | T9 - Go编译错误 - 未定义的变量 | FAILURE",
      ]);
      assert.equal(event.code, 0, event.stderr);
      assert.equal(JSON.parse(event.stdout).task, "T9");
      const stdin = await lifeline(
        dir,
        ["fail", "handle", "--json"],
        `${dir}/repo`,
        JSON.stringify({
          task: "T10",
          skill: "deploy",
          error: "ENOSPC: no space left on device",
          files: ["a.ts", "b.ts"],
        }),
      );
      assert.equal(stdin.code, 0, stdin.stderr);
      const out = JSON.parse(stdin.stdout);
      assert.deepEqual([out.type, out.strategy], ["process", "B"]);
      assert.match(await read(repo, ".trace/ERROR_TRACE.md"), /- 影响文件: a\.ts, b\.ts/);
    });
  },
});

Deno.test({
  name: "preconditions: no harness, or the breaker skill not enabled, is exit 1 naming the fix",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      await makeRepo(`${dir}/repo`);
      const missing = await lifeline(dir, [
        "fail",
        "handle",
        "--task",
        "t",
        "--skill",
        "s",
        "--error",
        "e",
      ]);
      assert.equal(missing.code, 1);
      assert.match(
        missing.stderr,
        /the harness is not set up: \.EnjoyHarness\/SKILL_REGISTRY\.md is missing/,
      );
      assert.match(missing.stderr, /hint: run `lifeline fail init` first/);
      await lifeline(dir, ["fail", "init"]);
      const registry = `${dir}/repo/.EnjoyHarness/SKILL_REGISTRY.md`;
      await Deno.writeTextFile(
        registry,
        (await Deno.readTextFile(registry)).replace(
          "[x] harness-enable-circuit-breaker",
          "[ ] harness-enable-circuit-breaker",
        ),
      );
      const disabled = await lifeline(dir, [
        "fail",
        "handle",
        "--task",
        "t",
        "--skill",
        "s",
        "--error",
        "e",
      ]);
      assert.equal(disabled.code, 1);
      assert.match(disabled.stderr, /the circuit breaker is not enabled \(熔断机制未启用\)/);
    });
  },
});

Deno.test("classification: rules as data, for many languages, and the rule that matched", () => {
  const cases: [string, string, string][] = [
    ["./main.go:12:3: undefined: total", "code", "undefined name"],
    ["src/cart.ts(4,7): error TS2304: Cannot find name 'cart'.", "code", "type error"],
    ["NameError: name 'cart' is not defined", "code", "undefined name"],
    ["error[E0425]: cannot find value `x` in this scope", "code", "undefined name"],
    ["Cart.java:5: error: cannot find symbol", "code", "undefined name"],
    ["ModuleNotFoundError: No module named 'requests'", "code", "import error"],
    ["SyntaxError: invalid syntax", "code", "syntax error"],
    ["Traceback (most recent call last):\n  File ...", "code", "runtime error"],
    ["违反分层架构 - UI层直接调用Repo层", "architecture", "layering violation"],
    ["UI layer calls Repo layer directly", "architecture", "layering violation"],
    ["import cycle not allowed: a -> b -> a", "architecture", "circular dependency"],
    ["file name violates the naming convention", "architecture", "naming convention"],
    ["precondition failed: schema not migrated", "process", "precondition not met"],
    ["open /data: EACCES", "process", "permission denied"],
    ["write failed: ENOSPC", "process", "resource unavailable"],
    ["context deadline exceeded", "process", "timeout"],
    ["429 Too Many Requests", "process", "rate limit"],
  ];
  for (const [text, type, rule] of cases) {
    assert.deepEqual(classifyError(text), { type, rule }, text);
  }
  assert.deepEqual(classifyError("something odd happened"), {
    type: "process",
    rule: "no rule matched; process by default",
  });
  assert.deepEqual(classifyError("SyntaxError", "architecture"), {
    type: "architecture",
    rule: "given with --type",
  });
});

Deno.test("event lines parse into skill, task and detail", () => {
  assert.deepEqual(
    parseEventLine(
      "2026-11-30T10:00:00Z | FAILURE | harness-goal | T-7 - goal check failed - twice | FAILURE",
    ),
    { skill: "harness-goal", task: "T-7", error: "goal check failed - twice" },
  );
});
