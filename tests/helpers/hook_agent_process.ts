/**
 * Starts a stand-in agent (hook_agent.ts): a process that runs a hook command through `sh -c`,
 * as Claude Code does, with lifeline on its PATH, and stays alive until stopped.
 *
 * @module
 */

import { childEnv, installLifelineWrapper, REPO_DIR } from "./lifeline.ts";

/** A running stand-in agent. */
export interface HookAgent {
  pid: number;
  /** Runs the hook once more (its next tool call), and waits for it. */
  again(): Promise<void>;
  stop(): Promise<void>;
}

/** Waits until `path` holds at least `count` lines. */
export async function waitForLines(path: string, count: number, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const text = await Deno.readTextFile(path).catch(() => "");
    if (text.split("\n").filter(Boolean).length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${path} never reached ${count} lines`);
}

/**
 * What starting an agent takes: its command line (`deno run … hook_agent.ts …`), its environment
 * (`env` over a clean one, lifeline on PATH) and the file it reports hook runs in.
 */
export async function hookAgentLaunch(
  dir: string,
  name: string,
  input: string,
  { env = {}, command = "lifeline hook heartbeat" }: {
    env?: Record<string, string>;
    command?: string;
  } = {},
): Promise<{ program: string; args: string[]; env: Record<string, string>; done: string }> {
  await installLifelineWrapper(`${dir}/bin`);
  // The agent runs in its project, which exists: hooks never create a project root.
  const cwd = JSON.parse(input).cwd;
  if (typeof cwd === "string") await Deno.mkdir(cwd, { recursive: true });
  const inputFile = `${dir}/${name}.input.json`;
  const done = `${dir}/${name}.done`;
  await Deno.writeTextFile(inputFile, input.endsWith("\n") ? input : input + "\n");
  return {
    program: Deno.execPath(),
    args: ["run", "-A", `${REPO_DIR}/tests/helpers/hook_agent.ts`, command, inputFile, done],
    env: childEnv({ ...env, PATH: `${dir}/bin:${Deno.env.get("PATH") ?? ""}` }),
    done,
  };
}

/** Starts an agent whose hook is `command` with `input`, and waits for its first hook run. */
export async function startHookAgent(
  dir: string,
  input: string,
  env: Record<string, string>,
  { name = "agent", command }: { name?: string; command?: string } = {},
): Promise<HookAgent> {
  const launch = await hookAgentLaunch(dir, name, input, { env, ...(command ? { command } : {}) });
  const child = new Deno.Command(launch.program, {
    args: launch.args,
    env: launch.env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  await waitForLines(launch.done, 1);
  let runs = 1;
  return {
    pid: child.pid,
    async again() {
      child.kill("SIGUSR1");
      await waitForLines(launch.done, ++runs);
    },
    async stop() {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await child.status;
    },
  };
}
