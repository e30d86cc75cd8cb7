/**
 * The self-heal kill switch (spec/self-heal.md): the file `self-heal.off` in Claude Code's config
 * directory. While it exists, self-heal is off: the reminder hook stays silent, in every project,
 * at once, with no change to settings.json and no restart.
 *
 * @module
 */

import { dirName } from "../core/path.ts";
import { describeError } from "./store.ts";

/** The switch's state. "unknown" means the file could not be checked (callers fail open). */
export interface KillSwitchState {
  state: "on" | "off" | "unknown";
  path: string;
  error?: string;
}

/** Reads the switch at `path`. Never throws. */
export async function readKillSwitch(path: string): Promise<KillSwitchState> {
  try {
    await Deno.lstat(path);
    return { state: "off", path };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { state: "on", path };
    return { state: "unknown", path, error: describeError(error) };
  }
}

/** Sets the switch. Idempotent; `changed` says whether the file was created or removed. */
export async function setKillSwitch(
  path: string,
  state: "on" | "off",
  now: number,
): Promise<{ changed: boolean }> {
  if (state === "on") {
    try {
      await Deno.remove(path);
      return { changed: true };
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return { changed: false };
      throw error;
    }
  }
  // Claude Code's config directory, often a link into a dotfiles repository: not project state.
  await Deno.mkdir(dirName(path), { recursive: true });
  try {
    await Deno.writeTextFile(
      path,
      `self-heal turned off by \`lifeline selfheal off\` at ${new Date(now).toISOString()}.\n` +
        "Delete this file, or run `lifeline selfheal on`, to turn it back on.\n",
      { createNew: true },
    );
    return { changed: true };
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) return { changed: false };
    throw error;
  }
}
