/**
 * `doctor`'s checks of Claude Code's settings: every file parses, lifeline's hooks call a program
 * that exists and a hook that exists, matchers match, and the binary the hooks call is on PATH.
 *
 * @module
 */

import { HOOK_NAMES } from "../claude/hook_names.ts";
import { commandHooks, lifelineHookOf, matcherProblem, matchers } from "../claude/settings.ts";
import { onPath } from "../host/self.ts";
import { type Check, type DoctorCheck, fail, ok, problem, warn } from "./check.ts";

/** Every settings file (user, project, local, managed) parses. */
export const settingsCheck: DoctorCheck = {
  name: "settings",
  summary: "every settings file (user, project, local, managed) parses; on a syntax error,\n" +
    "its line and column (the usual reason a hook setup breaks at startup)",
  run: async (facts) =>
    (await facts.settings()).map((scan): Check => {
      const { scope, path } = scan;
      if ("error" in scan) {
        return fail(
          "settings",
          `${scope}: cannot read ${path}: ${scan.error}`,
          "check the file's permissions",
        );
      }
      const read = scan.read;
      if (read.kind === "missing") return ok("settings", `${scope}: ${path} (not present)`);
      if (read.kind === "invalid") {
        return fail(
          "settings",
          `${scope}: ${path} is not valid JSON at line ${read.line}, column ${read.column}: ${read.reason}`,
          `fix line ${read.line} of ${path} (often a trailing comma); Claude Code ignores the whole file until then`,
        );
      }
      if (read.kind === "not an object") {
        return fail(
          "settings",
          `${scope}: ${path} holds ${read.found}, not a JSON object`,
          `make ${path} one JSON object, e.g. {"hooks": {}}`,
        );
      }
      return ok("settings", `${scope}: ${path} parses`);
    }),
};

/** The program a hook command runs exists (a path, or a name on PATH). */
async function programExists(command: string, path: string | undefined): Promise<string | null> {
  const first = /^"([^"]+)"|^(\S+)/.exec(command.trim());
  const program = first?.[1] ?? first?.[2] ?? "";
  const exists = program.includes("/") || program.includes("\\")
    ? await Deno.stat(program).then((s) => s.isFile, () => false)
    : (await onPath(program, path)) !== null;
  return exists ? null : program;
}

/** One lifeline hook command's check, or null when the command is not lifeline's. */
async function hookCommandCheck(
  where: string,
  command: string,
  path: string | undefined,
): Promise<Check | null> {
  if (!/lifeline|main\.ts/.test(command)) return null;
  if (!lifelineHookOf(command)) {
    const named = /\bhook\s+(\S+)/.exec(command)?.[1];
    if (!named || (HOOK_NAMES as readonly string[]).includes(named)) return null;
    return fail(
      "hooks",
      `${where}: "${command}" runs an unknown hook "${named}"`,
      `use one of: ${HOOK_NAMES.join(", ")}`,
    );
  }
  const missing = await programExists(command, path);
  return missing === null ? ok("hooks", `${where}: ${command}`) : fail(
    "hooks",
    `${where}: "${missing}" does not exist`,
    "install lifeline on PATH, or run `lifeline init` again to point the hooks at it",
  );
}

/** Hooks that call lifeline use a command that exists, and a real hook name. */
export const hooksCheck: DoctorCheck = {
  name: "hooks",
  summary: "hooks that call lifeline use a command that exists, and a real hook name",
  async run(facts) {
    const checks: Check[] = [];
    for (const { scope, value } of await facts.parsedSettings()) {
      for (const { event, command } of commandHooks(value)) {
        const check = await hookCommandCheck(`${scope} ${event}`, command, facts.env.PATH);
        if (check) checks.push(check);
      }
    }
    const parsed = await facts.parsedSettings();
    if (!parsed.some(({ value }) => commandHooks(value).some((h) => lifelineHookOf(h.command)))) {
      checks.push(warn("hooks", "no settings file runs lifeline's hooks", "run `lifeline init`"));
    }
    return checks;
  },
};

/** Matchers are valid regexes; `mcp__server` without `__.*` matches nothing. */
export const matchersCheck: DoctorCheck = {
  name: "matchers",
  summary: 'matchers are valid regexes; "mcp__server" without "__.*" matches nothing',
  async run(facts) {
    const checks = (await facts.parsedSettings()).flatMap(({ scope, value }) =>
      matchers(value).flatMap(({ event, matcher }): Check[] => {
        const found = matcherProblem(matcher);
        if (!found) return [];
        return [problem(found.level, {
          name: "matchers",
          message: `${scope} ${event}: ${found.message}`,
          fix: "edit the matcher in the settings file",
        })];
      })
    );
    return checks.length > 0 ? checks : [ok("matchers", "every matcher is valid")];
  },
};

/** lifeline is on PATH: a failure when hooks call it by its bare name. */
export const binaryCheck: DoctorCheck = {
  name: "binary",
  summary: "lifeline is on PATH",
  async run(facts) {
    const binary = await onPath("lifeline", facts.env.PATH);
    if (binary) return [ok("binary", `lifeline is on PATH: ${binary}`)];
    const bareHooks = (await facts.parsedSettings()).some(({ value }) =>
      commandHooks(value).some((h) => /^lifeline\s/.test(h.command))
    );
    return [problem(bareHooks ? "fail" : "warn", {
      name: "binary",
      message: "lifeline is not on PATH",
      fix: "put the lifeline binary in a PATH directory (e.g. ~/.local/bin)",
    })];
  },
};
