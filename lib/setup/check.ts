/**
 * What `doctor`'s checks are made of: the result of one check, the facts several checks share
 * (read once), and the shape of a check, so that adding one is adding one function to the list
 * in `doctor.ts`.
 *
 * @module
 */

import { type Config, ConfigError, DEFAULT_CONFIG, loadConfig } from "../state/config.ts";
import { lazy } from "../core/lazy.ts";
import { allSettingsPaths, readSettings, type SettingsRead } from "../claude/settings.ts";
import { describeError } from "../state/store.ts";

/** One line of `doctor`: a status, what was found, and for a problem the fix in one line. */
export interface Check {
  name: string;
  status: "ok" | "warn" | "fail";
  message: string;
  fix?: string;
}

/** An ok line. */
export function ok(name: string, message: string): Check {
  return { name, status: "ok", message };
}

/** A problem at `level`, with its fix. */
export function problem(
  level: "warn" | "fail",
  { name, message, fix }: { name: string; message: string; fix: string },
): Check {
  return { name, status: level, message, fix };
}

/** A warning, with its fix. */
export function warn(name: string, message: string, fix: string): Check {
  return problem("warn", { name, message, fix });
}

/** A failure, with its fix. */
export function fail(name: string, message: string, fix: string): Check {
  return problem("fail", { name, message, fix });
}

/** One settings file as read: its scope, path, and what was found (or why it could not be read). */
export type SettingsScan =
  & { scope: string; path: string }
  & (
    | { read: SettingsRead }
    | { error: string }
  );

/** What the checks look at. */
export interface DoctorInput {
  env: Readonly<Record<string, string>>;
  root: string;
  now: number;
}

/** The input, with what several checks read, each read once. */
export interface DoctorFacts extends DoctorInput {
  /** Every settings file Claude Code reads. */
  settings(): Promise<SettingsScan[]>;
  /** The parsed ones: the object of each that is one. */
  parsedSettings(): Promise<{ scope: string; value: Record<string, unknown> }[]>;
  /** The configuration, or the defaults when it is invalid (the error, for the config check). */
  config(): Promise<{ config: Config; error: ConfigError | null }>;
}

/** One check: its name as printed, a line for `--help`, and the function. */
export interface DoctorCheck {
  name: string;
  summary: string;
  run(facts: DoctorFacts): Promise<Check[]>;
}

/** The facts for an input. */
export function doctorFacts(input: DoctorInput): DoctorFacts {
  const settings = lazy(() =>
    Promise.all(
      allSettingsPaths(input.env, input.root).map(async ({ scope, path }) => {
        try {
          return { scope, path, read: await readSettings(path) };
        } catch (error) {
          return { scope, path, error: describeError(error) };
        }
      }),
    )
  );
  const config = lazy(async () => {
    try {
      return { config: await loadConfig(input.env, input.root), error: null };
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return { config: DEFAULT_CONFIG, error };
    }
  });
  return {
    ...input,
    settings,
    parsedSettings: async () =>
      (await settings()).flatMap((s) =>
        "read" in s && s.read.kind === "ok" ? [{ scope: s.scope, value: s.read.value }] : []
      ),
    config,
  };
}
