/**
 * Configuration: the policy defaults of DESIGN §7, overridden by the user's file
 * (`~/.config/lifeline/config.json`) and then by the project's (`<root>/.lifeline/config.json`).
 * Every key is optional; unknown keys are errors, so a typo never silently keeps a default.
 *
 * @module
 */

import type * as z from "zod";
import { CliError } from "../core/cli.ts";
import type * as JsonText from "../core/json_text.ts";
import { dirName } from "../core/path.ts";
import { projectPaths, userConfigPath } from "./layout.ts";
import { readStateText } from "./store.ts";
import type * as ConfigSchema from "./config_schema.ts";
import { importLater } from "../core/lazy.ts";

/** Every setting, with its default. Times are in seconds unless the name says otherwise. */
export const DEFAULT_CONFIG = {
  hooks: {
    /** How long a foreground hook waits for a state lock before skipping (fail open). */
    lockWaitMs: 5000,
  },
  mcp: {
    /** Backoff base: attempt n waits `baseSeconds * 2^(n-1)`: 1, 2, 4, 8, 16 s. */
    baseSeconds: 1,
    /** Advised retries before fallback advice. */
    maxAttempts: 5,
    /** Up to this fraction of each wait is taken off at random, so clients do not retry in step. */
    jitter: 0.25,
  },
  toolFallback: {
    /** Consecutive failures of one tool before its mapped alternative is suggested. */
    threshold: 2,
  },
  modelFallback: {
    /** Consecutive overload or server failures before a stronger model is suggested. */
    threshold: 3,
    /** Models from weakest to strongest. */
    ladder: ["haiku", "sonnet", "opus"],
  },
  retry: {
    /**
     * Foreground retries of a failing API: the watcher resumes an agent stuck on a transient API
     * error (529, 5xx) this many times in a row, then reports it. Background work never retries.
     */
    foregroundMax: 3,
  },
  crash: {
    /** An active loop state file older than this is stale. */
    loopStaleSeconds: 7200,
    /** A claim lock older than this is stale (unless its owner still runs). */
    claimStaleMinutes: 15,
  },
  stale: {
    /** A session whose heartbeat is older than this, and whose host is gone, is dead. */
    afterSeconds: 300,
    intervalSeconds: 60,
    /**
     * Finished sessions (ended, or scavenged with the handoff delivered) idle for longer than this
     * are deleted by `daemon stale` and `hook crash`. Live sessions never are.
     */
    pruneAfterDays: 7,
    /**
     * After scavenging a session whose agent ran in tmux, resume it in a new window of the same
     * tmux session (`daemon stale --revive` turns it on for every project).
     */
    revive: false,
    /** The agent command a revive runs; the session id is added as its last argument. */
    reviveCommand: ["claude", "--resume"],
  },
  watch: {
    intervalSeconds: 60,
    /** Resume this long after the banner's reset time. */
    resumeMarginSeconds: 60,
    /** Panes that reset together are resumed this far apart. */
    staggerSeconds: 10,
    /** Leave a pane with the client's own auto-continue alone until this long after its time. */
    nativeMarginSeconds: 180,
    /** Foreground commands that count as the agent. */
    agentCommands: ["claude"],
    resumeText: "continue",
    /** Resume attempts per pane and reset before giving up. */
    maxAttempts: 3,
    /** Backoff for a final transient API error on an idle prompt. */
    transientBackoffSeconds: 120,
    /** How long after typing to look again and judge whether the resume worked. */
    verifyDelaySeconds: 5,
    /** The pause between the resume text and its Enter, so Enter is not part of a paste. */
    keyDelayMs: 300,
  },
  breaker: {
    /** Failures of one task or skill that open its circuit breaker. */
    threshold: 3,
    /** A skill's failure count from which `fail handle` rolls back. */
    rollbackAtCount: 2,
    /** Tags that mark a stable commit when there is no stable mark (`fail handle --success`). */
    stableTagPattern: "stable*",
    maxIterations: 100,
    /** A rollback refuses to save a file larger than this that git does not hold already. */
    maxBackupFileMB: 100,
    /** A rollback refuses when lifeline's backups would add more than this to the repository. */
    maxBackupsMB: 1024,
  },
  harness: {
    /** The headings of the harness's markdown: "zh" (the specification's) or "en". */
    language: "zh" as "zh" | "en",
  },
  notify: {
    /**
     * A command run for what needs a human (a refusal, giving up, a login or billing problem, a
     * dead session, an open breaker), as an argv list; the message is added as its last
     * argument. E.g. ["notify-send", "lifeline"]. null: none.
     */
    command: null as string[] | null,
    /** Show the message on the pane's tmux clients, with their terminal bell. */
    tmux: true,
  },
};

/** The resolved configuration. */
export type Config = typeof DEFAULT_CONFIG;

/** A config file's contents: a strict, all-optional mirror of {@linkcode DEFAULT_CONFIG}. */
export type ConfigFile = z.infer<ReturnType<typeof ConfigSchema.configFileSchema>>;

/**
 * A config file that cannot be used, naming the file, the field and the reason. A command that
 * meets one exits 1 with this message (it is a {@linkcode CliError}); hooks fall back to defaults.
 */
export class ConfigError extends CliError {
  override name = "ConfigError";
  constructor(readonly file: string, readonly field: string, readonly reason: string) {
    super(
      `Invalid config "${file}": ${field}: ${reason}`,
      "fix the file, or remove it to use the defaults",
    );
  }
}

/**
 * Parses one config file's text. Rejects with {@linkcode ConfigError}. zod is loaded only here:
 * most hook calls find no config file.
 */
export async function parseConfigFile(file: string, text: string): Promise<ConfigFile> {
  const { describeIssue, issuePath, parseJsonText } = await importLater<typeof JsonText>(
    "../core/json_text.ts",
    import.meta.url,
  );
  const json = parseJsonText(text);
  if (!json.ok) {
    const { line, column, reason } = json.error;
    throw new ConfigError(file, `line ${line}, column ${column}`, `not valid JSON (${reason})`);
  }
  const { checkConfigFile } = await importLater<typeof ConfigSchema>(
    "./config_schema.ts",
    import.meta.url,
  );
  const result = checkConfigFile(json.value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.code === "unrecognized_keys" && issue.keys.length === 1
    ? [...issue.path, issue.keys[0]!]
    : issue.path;
  throw new ConfigError(file, issuePath(path), describeIssue(issue, json.value));
}

/**
 * Settings only the user's own config may set: what the watcher types and into which programs,
 * and what lifeline runs. A project's `.lifeline/config.json` comes with the repository, and a
 * repository someone else wrote must not choose them.
 */
export const USER_ONLY_SETTINGS = [
  ["watch", "resumeText"],
  ["watch", "agentCommands"],
  ["notify", "command"],
  ["stale", "reviveCommand"],
] as const;

/** Refuses a project config that sets a user-only setting. Throws {@linkcode ConfigError}. */
function checkProjectConfig(file: string, config: ConfigFile): void {
  for (const [section, key] of USER_ONLY_SETTINGS) {
    const values = config[section] as Record<string, unknown> | undefined;
    if (values?.[key] !== undefined) {
      throw new ConfigError(
        file,
        `${section}.${key}`,
        "can be set only in the user config (~/.config/lifeline/config.json): a project's " +
          "config comes with its repository, and must not choose what lifeline types or runs",
      );
    }
  }
}

/** Applies config files, in order, over the defaults. */
export function mergeConfig(...files: ConfigFile[]): Config {
  // A copy (DEFAULT_CONFIG is plain JSON): cheaper to start than structuredClone, for a hook.
  const config = JSON.parse(JSON.stringify(DEFAULT_CONFIG)) as Config;
  for (const file of files) {
    for (const [section, values] of Object.entries(file)) {
      if (section === "$schema" || !values || typeof values !== "object") continue;
      const target = config[section as keyof Config] as Record<string, unknown>;
      for (const [key, value] of Object.entries(values)) {
        if (value !== undefined) target[key] = value;
      }
    }
  }
  return config;
}

/** Largest config file read; a real one is under a KiB. */
const MAX_CONFIG_BYTES = 1 << 20;

async function readConfigFile(path: string): Promise<ConfigFile | undefined> {
  let text: string;
  try {
    // Its directory may be a link (dotfiles); the file must be a plain one: a FIFO would block.
    text = await readStateText(path, { root: dirName(path), maxBytes: MAX_CONFIG_BYTES });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new ConfigError(path, "(file)", error instanceof Error ? error.message : String(error));
  }
  return await parseConfigFile(path, text);
}

/** The config files that apply, user first; `root` adds the project's. */
export function configPaths(env: Readonly<Record<string, string>>, root?: string): string[] {
  return root === undefined ? [userConfigPath(env)] : [
    userConfigPath(env),
    projectPaths(root).config,
  ];
}

/** Loads the user's and (with `root`) the project's config. Throws {@linkcode ConfigError}. */
export async function loadConfig(
  env: Readonly<Record<string, string>>,
  root?: string,
): Promise<Config> {
  const files: ConfigFile[] = [];
  for (const [i, path] of configPaths(env, root).entries()) {
    const file = await readConfigFile(path);
    if (file && i > 0) checkProjectConfig(path, file);
    if (file) files.push(file);
  }
  return mergeConfig(...files);
}
