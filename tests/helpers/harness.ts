/**
 * The loop harness in tests: `fail …` commands run as child processes in `<dir>/repo` with
 * `<dir>/home` as HOME, and a process that writes lifeline's state like other sessions' hooks.
 *
 * @module
 */

import assert from "node:assert/strict";
import { git, makeRepo } from "./git_repo.ts";
import { REPO_DIR, runLifeline } from "./lifeline.ts";

/** Runs `lifeline <args>` in `cwd` (the repository by default). */
export async function lifeline(dir: string, args: string[], cwd = `${dir}/repo`) {
  return await runLifeline(args, { env: { HOME: `${dir}/home` }, cwd, timeoutMs: 120_000 });
}

/** `fail handle … --json`; asserts it answered (0 or 10) and returns the JSON and the code. */
export async function handle(dir: string, task: string, ...extra: string[]) {
  const result = await lifeline(dir, [
    "fail",
    "handle",
    "--task",
    task,
    "--skill",
    `impl-${task}`,
    "--error",
    "the build broke",
    "--unstable",
    "--json",
    ...extra,
  ]);
  assert.ok(result.code === 0 || result.code === 10, `exit ${result.code}: ${result.stderr}`);
  return { code: result.code, ...JSON.parse(result.stdout) };
}

/** `fail restore <ref> …`. */
export async function restore(dir: string, ref: string, ...extra: string[]) {
  return await lifeline(dir, ["fail", "restore", ref, ...extra]);
}

/** A repository tagged `stable-1`, with the harness (and a budget for 100 handlings). */
export async function setUp(dir: string, files?: Record<string, string>, root = `${dir}/repo`) {
  const repo = await makeRepo(`${dir}/repo`, files);
  await Deno.mkdir(`${root}/.lifeline`, { recursive: true });
  await Deno.writeTextFile(`${root}/.lifeline/config.json`, '{"breaker": {"maxIterations": 1000}}');
  const init = await lifeline(dir, ["fail", "init"], root);
  assert.equal(init.code, 0, init.stderr);
  return repo;
}

/** The harness's JSON state under `root`. */
export const state = async (root: string) =>
  JSON.parse(await Deno.readTextFile(`${root}/.EnjoyHarness/handle-failure.json`));

/** A process that writes lifeline's state like another session's hooks (see state_writer.ts). */
export function stateWriter(root: string, ...args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-all",
      `--config=${REPO_DIR}/deno.json`,
      `${REPO_DIR}/tests/helpers/state_writer.ts`,
      args[0]!,
      root,
      ...args.slice(1),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

/** The first line a child printed. */
export async function firstLine(child: Deno.ChildProcess): Promise<string> {
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  return new TextDecoder().decode(value).trim();
}

/** The backup refs of a repository. */
export async function backupRefs(repo: string): Promise<string[]> {
  return (await git(repo, "for-each-ref", "--format=%(refname)", "refs/lifeline/backups"))
    .split("\n").filter(Boolean);
}
