/**
 * Where this program is and how it is called: finding a program on PATH, and the command line
 * hooks should use to run lifeline (the installed binary, or this checkout from source).
 *
 * @module
 */

import { baseName, isAbsolutePath, joinPath } from "../core/path.ts";

/** Finds `name` on PATH. */
export async function onPath(name: string, path: string | undefined): Promise<string | null> {
  for (const dir of (path ?? "").split(Deno.build.os === "windows" ? ";" : ":")) {
    if (!dir) continue;
    for (const candidate of Deno.build.os === "windows" ? [`${name}.exe`, name] : [name]) {
      try {
        const info = await Deno.stat(joinPath(dir, candidate));
        if (info.isFile && (Deno.build.os === "windows" || ((info.mode ?? 0) & 0o111) !== 0)) {
          return joinPath(dir, candidate);
        }
      } catch {
        // not here
      }
    }
  }
  return null;
}

function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `"${word.replaceAll('"', '\\"')}"`;
}

/**
 * The binary's permissions, for hooks that run lifeline from source (tests/project_test.ts checks
 * them against the tasks and the release build). All of them: lifeline reads `/proc` for process
 * identity, which Deno allows only with --allow-all, and the unscoped --allow-run it needs anyway
 * is, as Deno's own documentation warns, "effectively the same as allow-all". And a young
 * generation capped at 2 MiB: V8 otherwise grows it with every collection that finds live data, up
 * to 16 MiB a half, and the daemon scavenging a long transcript would end far above its 64 MiB
 * budget (hooks allocate too little to notice).
 */
export const SOURCE_RUN_FLAGS = ["--allow-all", "--v8-flags=--max-semi-space-size=2"];

/**
 * How to run lifeline, as an argv: `lifeline` when that is on PATH (its path there, with
 * `absolute`); else this binary's absolute path; when running from source (`deno run`), the
 * absolute deno, {@linkcode SOURCE_RUN_FLAGS} and `main.ts`.
 */
export async function binaryArgv(
  env: Readonly<Record<string, string>>,
  { absolute = false }: { absolute?: boolean } = {},
): Promise<string[]> {
  const installed = await onPath("lifeline", env.PATH);
  // A relative PATH entry ("bin") names nothing a service, started elsewhere, could find.
  if (installed && !absolute) return ["lifeline"];
  if (installed && isAbsolutePath(installed)) return [installed];
  const exec = Deno.execPath();
  if (!/^deno(\.exe)?$/.test(baseName(exec))) return [exec];
  const main = new URL("../../main.ts", import.meta.url).pathname;
  return [exec, "run", "--quiet", ...SOURCE_RUN_FLAGS, main];
}

/** How hooks should call lifeline: {@linkcode binaryArgv} as one command line. */
export async function binaryCommand(env: Readonly<Record<string, string>>): Promise<string> {
  return (await binaryArgv(env)).map(quote).join(" ");
}
