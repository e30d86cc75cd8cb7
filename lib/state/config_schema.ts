/**
 * The zod schema of a config file (see `config.ts`), in a module of its own so that zod loads
 * only when there is a config file to check.
 *
 * @module
 */

import * as z from "zod";
import { lazy } from "../core/lazy.ts";

/**
 * What a config file may contain: a strict, all-optional mirror of `DEFAULT_CONFIG`. Built on
 * first use.
 */
export const configFileSchema = lazy(() => {
  // Every duration is bounded: a timer cannot wait longer than 2^31 ms (~24.8 days), and an
  // interval of months is a typo, not a setting.
  const seconds = (max: number) => z.number().check(z.minimum(0), z.maximum(max));
  const count = () => z.int().check(z.minimum(1), z.maximum(1000));
  const names = () => z.array(z.string().check(z.minLength(1))).check(z.minLength(1));
  const DAY = 86_400;
  return z.strictObject({
    $schema: z.optional(z.string()),
    hooks: z.optional(z.strictObject({
      lockWaitMs: z.optional(z.int().check(z.minimum(0), z.maximum(60_000))),
    })),
    mcp: z.optional(z.strictObject({
      baseSeconds: z.optional(seconds(3600)),
      maxAttempts: z.optional(count()),
      jitter: z.optional(z.number().check(z.minimum(0), z.maximum(1))),
    })),
    toolFallback: z.optional(z.strictObject({ threshold: z.optional(count()) })),
    modelFallback: z.optional(z.strictObject({
      threshold: z.optional(count()),
      ladder: z.optional(names()),
    })),
    retry: z.optional(z.strictObject({
      // spec/error-recovery.md §5.7: foreground work retries at most 3 times.
      foregroundMax: z.optional(z.int().check(z.minimum(0), z.maximum(3))),
    })),
    notify: z.optional(z.strictObject({
      command: z.optional(z.nullable(names())),
      tmux: z.optional(z.boolean()),
    })),
    crash: z.optional(z.strictObject({
      loopStaleSeconds: z.optional(seconds(30 * DAY)),
      claimStaleMinutes: z.optional(seconds(30 * 24 * 60)),
    })),
    stale: z.optional(z.strictObject({
      afterSeconds: z.optional(seconds(30 * DAY)),
      intervalSeconds: z.optional(z.number().check(z.minimum(1), z.maximum(DAY))),
      pruneAfterDays: z.optional(seconds(3650)),
      revive: z.optional(z.boolean()),
      reviveCommand: z.optional(names()),
    })),
    watch: z.optional(z.strictObject({
      intervalSeconds: z.optional(z.number().check(z.minimum(1), z.maximum(DAY))),
      resumeMarginSeconds: z.optional(seconds(DAY)),
      staggerSeconds: z.optional(seconds(3600)),
      nativeMarginSeconds: z.optional(seconds(DAY)),
      agentCommands: z.optional(names()),
      // Typed into the agent's prompt as it is: plain words, so it cannot be a slash command,
      // a shell escape (`!`) or carry a key of its own (a CR is an Enter no check precedes).
      resumeText: z.optional(
        z.string().check(
          z.minLength(1),
          z.maxLength(200),
          z.regex(/^[\p{L}\p{N}][^\p{Cc}\u2028\u2029]*$/u, {
            error: "must start with a letter or digit and hold no control characters",
          }),
        ),
      ),
      // How often the watcher may type into one pane is bounded, whoever wrote the config:
      // a repository's config must not be able to make it hammer a failing API (spec §5.7).
      maxAttempts: z.optional(z.int().check(z.minimum(1), z.maximum(10))),
      transientBackoffSeconds: z.optional(z.number().check(z.minimum(30), z.maximum(DAY))),
      verifyDelaySeconds: z.optional(seconds(60)),
      keyDelayMs: z.optional(z.int().check(z.minimum(0), z.maximum(10_000))),
    })),
    breaker: z.optional(z.strictObject({
      threshold: z.optional(count()),
      rollbackAtCount: z.optional(count()),
      stableTagPattern: z.optional(z.string().check(z.minLength(1))),
      maxIterations: z.optional(z.int().check(z.minimum(1), z.maximum(1_000_000))),
      maxBackupFileMB: z.optional(z.number().check(z.minimum(0), z.maximum(1 << 20))),
      maxBackupsMB: z.optional(z.number().check(z.minimum(0), z.maximum(1 << 24))),
    })),
    harness: z.optional(z.strictObject({ language: z.optional(z.enum(["zh", "en"])) })),
  });
});

/** A config file's contents. */
export type ConfigFile = z.infer<ReturnType<typeof configFileSchema>>;

/** zod's `safeParse` of a config file's JSON. */
export function checkConfigFile(value: unknown) {
  return z.safeParse(configFileSchema(), value);
}
