/**
 * Runs the lifeline CLI as a child process: the program `LIFELINE_BIN` names when it is set (the
 * release workflow sets it to each compiled binary), else this checkout exactly as
 * `deno task lifeline` runs it: the same entry point and the same permission flags (read from the
 * task in deno.json, which the release build also uses).
 *
 * @module
 */

import manifest from "../../deno.json" with { type: "json" };

/** The repository's root directory. */
export const REPO_DIR = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/**
 * The runtime flags of the `lifeline` task (and of the compiled binary): its permissions, and the
 * V8 flag that caps the young generation (see deno.json).
 */
export function lifelinePermissionFlags(): string[] {
  return manifest.tasks.lifeline.split(/\s+/).filter((word) =>
    word.startsWith("--allow-") || word.startsWith("--v8-flags=")
  );
}

/**
 * The program `LIFELINE_BIN` names, as an absolute path (children run in other directories), or
 * undefined when it is not set.
 */
export function lifelineBinary(): string | undefined {
  const bin = Deno.env.get("LIFELINE_BIN");
  if (!bin) return undefined;
  try {
    return Deno.realPathSync(bin);
  } catch {
    throw new Error(`LIFELINE_BIN=${bin} is not a file: give the path of a lifeline binary`);
  }
}

/**
 * `LIFELINE_BIN` when it is a compiled binary; undefined when it is unset or a script (such as the
 * one `deno task install` writes), which runs lifeline with `deno run`.
 */
export function compiledLifeline(): string | undefined {
  const bin = lifelineBinary();
  if (bin === undefined) return undefined;
  const start = new Uint8Array(2);
  using file = Deno.openSync(bin);
  file.readSync(start);
  return new TextDecoder().decode(start) === "#!" ? undefined : bin;
}

/** The program under test: `LIFELINE_BIN`, or `deno run <flags> main.ts`, which behaves like it. */
export function lifelineCommand(): { program: string; args: string[] } {
  const bin = lifelineBinary();
  if (bin !== undefined) return { program: bin, args: [] };
  return {
    program: Deno.execPath(),
    args: ["run", "--quiet", ...lifelinePermissionFlags(), `${REPO_DIR}/main.ts`],
  };
}

let denoDir: string | undefined;

/**
 * The test runner's Deno cache directory. Children get it explicitly: they run with their own
 * HOME, and without it each would transpile everything again into an empty cache.
 */
export function denoCacheDir(): string {
  if (denoDir === undefined) {
    const info = new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stderr: "null" })
      .outputSync();
    denoDir = JSON.parse(new TextDecoder().decode(info.stdout)).denoDir as string;
  }
  return denoDir;
}

/** The environment every child gets, under `extra`. */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    DENO_DIR: denoCacheDir(),
    NO_COLOR: "1",
    ...extra,
  };
}

/** What a run printed and returned. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options for {@linkcode runLifeline}. */
export interface RunOptions {
  /** Bytes or text for stdin; stdin is closed right after. */
  stdin?: string | Uint8Array;
  /** The whole environment of the child (nothing is inherited but PATH and, unless set, HOME). */
  env?: Record<string, string>;
  cwd?: string;
  /** Kills the child and fails after this long. */
  timeoutMs?: number;
}

/** Runs `lifeline <args>` and collects its output; fails if it outlives `timeoutMs`. */
export async function runLifeline(
  args: readonly string[],
  { stdin, env = {}, cwd, timeoutMs = 30_000 }: RunOptions = {},
): Promise<RunResult> {
  const child = startLifeline(args, "piped", { env, ...(cwd ? { cwd } : {}) });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  try {
    const writer = child.stdin.getWriter();
    try {
      if (stdin !== undefined) {
        await writer.write(typeof stdin === "string" ? new TextEncoder().encode(stdin) : stdin);
      }
      await writer.close();
    } catch {
      // The child may exit before reading everything (e.g. oversized input); that is its answer.
    }
    const result = await child.output();
    if (timedOut) throw new Error(`lifeline ${args.join(" ")} timed out`);
    const decoder = new TextDecoder();
    return {
      code: result.code,
      stdout: decoder.decode(result.stdout),
      stderr: decoder.decode(result.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The lines of lifeline's own log under an isolated HOME (see `ownLogPath`). */
export async function ownLogLines(home: string): Promise<Record<string, unknown>[]> {
  try {
    const text = await Deno.readTextFile(`${home}/.local/state/lifeline/lifeline.log`);
    return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/**
 * Asserts a hook's stdout is what the client accepts: empty, or exactly one JSON object whose
 * `hookSpecificOutput.hookEventName` is `event`. Returns the object (or null when empty).
 */
export function parseHookStdout(
  stdout: string,
  event: string,
): { hookSpecificOutput: { hookEventName: string; additionalContext: string } } | null {
  if (stdout === "") return null;
  const lines = stdout.trimEnd().split("\n");
  if (lines.length !== 1) throw new Error(`hook printed ${lines.length} lines: ${stdout}`);
  const output = JSON.parse(lines[0]!);
  if (output?.hookSpecificOutput?.hookEventName !== event) {
    throw new Error(`hookEventName is not ${event}: ${stdout}`);
  }
  return output;
}

/** Starts `lifeline <args>` in the background, stdout piped, stderr piped. */
export function spawnLifeline(
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Deno.ChildProcess {
  return startLifeline(args, "null", options);
}

/** Starts `lifeline <args>` with a clean environment (see {@linkcode childEnv}). */
function startLifeline(
  args: readonly string[],
  stdin: "piped" | "null",
  { env = {}, cwd }: { env?: Record<string, string>; cwd?: string },
): Deno.ChildProcess {
  const { program, args: base } = lifelineCommand();
  return new Deno.Command(program, {
    args: [...base, ...args],
    stdin,
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: childEnv(env),
    ...(cwd ? { cwd } : {}),
  }).spawn();
}

/**
 * Writes an executable `lifeline` into `binDir` that runs the program under test (see
 * {@linkcode lifelineCommand}), so a PATH holding `binDir` behaves as if it were installed.
 */
export async function installLifelineWrapper(binDir: string): Promise<string> {
  const { program, args } = lifelineCommand();
  const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
  const script = `#!/bin/sh\nDENO_DIR=${quote(denoCacheDir())} exec ${
    [program, ...args].map(quote).join(" ")
  } "$@"\n`;
  const path = `${binDir}/lifeline`;
  await Deno.mkdir(binDir, { recursive: true });
  await Deno.writeTextFile(path, script, { mode: 0o755 });
  return path;
}
