/**
 * The names of lifeline's hooks (`lifeline hook <name>`), in one place: the command table, `init`,
 * `doctor` and the settings reader all take them from here.
 *
 * @module
 */

/** Every hook lifeline has, in the order `--help` lists them. */
export const HOOK_NAMES = ["crash", "track", "remind", "heartbeat"] as const;

/** One of {@linkcode HOOK_NAMES}. */
export type HookName = (typeof HOOK_NAMES)[number];
