/**
 * Demo: the failure handler on a real git repository, through the specification's five
 * scenarios, with a rollback and a restore.
 *
 * @module
 */

import { commitAll, git, makeRepo } from "../tests/helpers/git_repo.ts";
import type { DemoPlace } from "./hooks.ts";
import { expect, heading, lifeline, say, step } from "./narrate.ts";

/** The five scenarios of spec/handle-failure.md. Returns the loop's repository. */
export async function demoFail({ env }: DemoPlace, scratch: string): Promise<string> {
  heading("fail handle: an autonomous loop's failures, end to end");
  const repo = await makeRepo(`${scratch}/repo`, { "src/cart.ts": "export const total = 0;\n" });
  const run = (args: string[], quiet = false) => lifeline(args, { env, cwd: repo, quiet });
  /** `lifeline fail handle` for one failure; `quiet` hides its output (a lead-up failure). */
  const fail = (task: string, skill: string, error: string, quiet = false) =>
    run(["fail", "handle", "--task", task, "--skill", skill, "--error", error], quiet);
  step("A git repository whose first commit is tagged stable-1; `fail init` adds the harness");
  await run(["fail", "init"]);

  step("Scenario 1: a code error, at count 1, becomes 2/3 and gets strategy A (retry)");
  await fail("T1", "harness-validate-output", "Go编译错误 - 未定义的变量 total");
  const s1 = await fail("T1", "harness-validate-output", "Go编译错误 - 未定义的变量 total");
  expect(s1.code === 0 && /strategy A/.test(s1.stdout), "scenario 1: strategy A, exit 0");

  step("Scenario 2: an architecture error rolls back to stable-1 (work saved first), no retry");
  await Deno.writeTextFile(
    `${repo}/src/ui.ts`,
    "import { db } from './repo.ts'; // UI calls the repo layer\n",
  );
  await commitAll(repo, "UI calls the repo layer");
  await Deno.writeTextFile(`${repo}/src/notes.txt`, "uncommitted notes\n");
  const s2 = await fail("T2", "layering", "违反分层架构 - UI层直接调用Repo层");
  expect(s2.code === 10 && /rollback: yes/.test(s2.stdout), "scenario 2: rolled back, exit 10");
  const restore = /restore with: (.+)/.exec(s2.stdout)![1]!.split(" ").slice(1);
  say(
    `  HEAD is now ${(await git(repo, "log", "--oneline", "-1"))}; src/ui.ts is gone from the tree`,
  );
  step("...and the saved work comes back with `fail restore`");
  await run(restore);
  expect((await Deno.readTextFile(`${repo}/src/notes.txt`)) === "uncommitted notes\n", "restored");
  say(`  HEAD is back at ${(await git(repo, "log", "--oneline", "-1"))}, src/notes.txt is back`);

  step(
    "Scenario 3: the third failure of a task opens its circuit breaker (CRITICAL) and escalates",
  );
  for (let i = 0; i < 2; i++) {
    await fail("T3", "spawn", "TypeError: agent is undefined", true);
  }
  const s3 = await fail("T3", "spawn", "TypeError: agent is undefined");
  expect(s3.code === 10 && /breaker: opened/.test(s3.stdout), "scenario 3: breaker opened");

  step("Scenario 4: a retry that succeeds clears the counts and marks HEAD stable");
  await fail("T4", "fmt", "SyntaxError: Unexpected token", true);
  const s4 = await run(["fail", "handle", "--success", "--task", "T4", "--skill", "fmt"]);
  expect(s4.code === 0, "scenario 4: success recorded");

  step("Scenario 5: three failures of mixed types open the breaker and write the report");
  for (
    const error of ["error TS2304: Cannot find name 'cart'", "ReferenceError: total is not defined"]
  ) {
    await fail("T5", "build", error, true);
  }
  const s5 = await fail("T5", "build", "EACCES: permission denied");
  expect(s5.code === 10, "scenario 5: stop");
  const report = await Deno.readTextFile(`${repo}/.trace/FAILURE_REPORT_T5.md`);
  say("  .trace/FAILURE_REPORT_T5.md, its 熔断状态 section:");
  say(...report.split("\n").filter((l) => /任务级熔断|错误计数/.test(l)).map((l) => `  │ ${l}`));
  return repo;
}
