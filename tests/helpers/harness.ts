/**
 * The loop harness in tests: `fail …` commands run as child processes in `<dir>/repo` with
 * `<dir>/home` as HOME, and a process that writes lifeline's state like other sessions' hooks.
 *
 * @module
 */

import assert from "node:assert/strict";
import { git, makeRepo } from "./git_repo.ts";
import { REPO_DIR, runLifeline } from "./lifeline.ts";
import { runInProcess } from "./in_process.ts";

/** Runs `lifeline <args>` in `cwd` (the repository by default), `stdin` given and closed, `env` added. */
export async function lifeline(
  dir: string,
  args: string[],
  cwd = `${dir}/repo`,
  stdin?: string,
  env: Record<string, string> = {},
) {
  return await runLifeline(args, {
    env: { HOME: `${dir}/home`, ...env },
    cwd,
    ...(stdin === undefined ? {} : { stdin }),
    timeoutMs: 120_000,
  });
}

/** `lifeline <args>` in this process (`in_process.ts`), in `cwd`, with `<dir>/home` as HOME. */
export function here(dir: string, args: string[], cwd = `${dir}/repo`) {
  return runInProcess(args, { cwd, env: { HOME: `${dir}/home` } });
}

/** A failure of `task` that rolls back, handled in this process: the JSON's `rollback`. */
export async function rollbackHere(dir: string, task: string, cwd = `${dir}/repo`) {
  const result = await here(dir, [
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
    "--root",
    cwd,
  ], cwd);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout).rollback;
}

/** `fail handle --task … --skill … --error …`; asserts it answered (exit 0 or 10). */
export async function failHandle(
  dir: string,
  [task, skill, error]: [string, string, string],
  ...extra: string[]
) {
  const result = await lifeline(dir, [
    "fail",
    "handle",
    "--task",
    task,
    "--skill",
    skill,
    "--error",
    error,
    ...extra,
  ]);
  assert.ok(result.code === 0 || result.code === 10, `exit ${result.code}: ${result.stderr}`);
  return result;
}

/** `fail handle … --json`: the JSON and the exit code. */
export async function handleJson(
  dir: string,
  failure: [string, string, string],
  ...extra: string[]
) {
  const result = await failHandle(dir, failure, "--json", ...extra);
  return { code: result.code, ...JSON.parse(result.stdout) };
}

/** A failure of `task` that rolls back (--unstable), as JSON. */
export function handle(dir: string, task: string, ...extra: string[]) {
  return handleJson(dir, [task, `impl-${task}`, "the build broke"], "--unstable", ...extra);
}

/**
 * A `git` on a PATH of its own that kills its caller (kill -9, as a crash would) when one of its
 * arguments is `argument`, before doing anything; every other call is the real git. Returns the
 * PATH to run lifeline with.
 */
export async function killingGit(dir: string, argument: string): Promise<string> {
  const real = new TextDecoder().decode(
    (await new Deno.Command("sh", { args: ["-c", "command -v git"], stdout: "piped" }).output())
      .stdout,
  ).trim();
  await Deno.mkdir(`${dir}/shim`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/shim/git`,
    `#!/bin/sh\nfor a in "$@"; do [ "$a" = '${argument}' ] && kill -9 $PPID && exit 137; done\n` +
      `exec '${real}' "$@"\n`,
    { mode: 0o755 },
  );
  return `${dir}/shim:${Deno.env.get("PATH")}`;
}

/** `fail restore <ref> …`. */
export async function restore(dir: string, ref: string, ...extra: string[]) {
  return await lifeline(dir, ["fail", "restore", ref, ...extra]);
}

/**
 * A repository tagged `stable-1` at `<dir>/repo`, with the harness at `root`; `budget` sets
 * breaker.maxIterations first, for tests that handle more than ten failures.
 */
export async function setUp(
  dir: string,
  files?: Record<string, string>,
  { root = `${dir}/repo`, budget }: { root?: string; budget?: number } = {},
) {
  const repo = await makeRepo(`${dir}/repo`, files);
  if (budget !== undefined) {
    await Deno.mkdir(`${root}/.lifeline`, { recursive: true });
    const config = { breaker: { maxIterations: budget } };
    await Deno.writeTextFile(`${root}/.lifeline/config.json`, JSON.stringify(config));
  }
  const init = await here(dir, ["fail", "init"], root);
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

/** Stops tracking `paths` in a new commit; the files stay on disk. */
export async function untrack(repo: string, ...paths: string[]): Promise<void> {
  await git(repo, "rm", "--cached", "--quiet", "-r", ...paths);
  await git(repo, "commit", "--quiet", "-m", `untrack ${paths.join(", ")}`);
}
