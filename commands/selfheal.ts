/**
 * `lifeline selfheal on|off|status`: the kill switch for the self-heal reminder.
 *
 * @module
 */

import { CliError, type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { readKillSwitch, setKillSwitch } from "../lib/state/kill_switch.ts";
import { killSwitchPath } from "../lib/state/layout.ts";
import { describeError } from "../lib/state/store.ts";

export const help = `Usage: lifeline selfheal <on|off|status> [--json]

Turns the self-heal reminder (\`lifeline hook remind\`) on or off. The kill switch is the file
self-heal.off in $CLAUDE_CONFIG_DIR, or in ~/.claude when that is unset: while it exists,
self-heal is off in every project at once, with no change to settings.json and no restart.

Actions:
  on       remove the kill switch (does nothing if it is already on)
  off      create the kill switch (does nothing if it is already off)
  status   say which state holds and where the file is

Options:
  --json   print {"state", "path", "changed"} as one JSON object
  -h, --help`;

/** Parsed arguments. */
export interface SelfhealArgs {
  action: "on" | "off" | "status";
  json: boolean;
}

/** Parses `selfheal` arguments. Throws UsageError. */
export function parse(args: readonly string[]): SelfhealArgs {
  const { values, positionals } = parseFlags(args, { json: { type: "boolean" } }, {
    maxPositionals: 1,
  });
  const action = positionals[0];
  if (action === undefined) throw new UsageError("missing action: on, off or status");
  if (action !== "on" && action !== "off" && action !== "status") {
    throw new UsageError(`unknown action "${action}": use on, off or status`);
  }
  return { action, json: values.json === true };
}

export async function run(ctx: Context): Promise<number> {
  const { action, json } = parse(ctx.args);
  const path = killSwitchPath(ctx.env);
  let changed = false;
  if (action !== "status") {
    try {
      ({ changed } = await setKillSwitch(path, action, ctx.now()));
    } catch (error) {
      throw new CliError(
        `Cannot turn self-heal ${action}: ${describeError(error)}`,
        `check that ${path} can be ${action === "off" ? "created" : "removed"}`,
      );
    }
  }
  const { state, error } = await readKillSwitch(path);
  if (json) {
    ctx.out.json({ state, path, changed, ...(error ? { error } : {}) });
  } else if (state === "unknown") {
    ctx.out.line(`self-heal state is unknown: cannot check ${path} (${error})`);
  } else if (action === "status") {
    ctx.out.line(
      state === "off"
        ? `self-heal is off: ${path} exists (\`lifeline selfheal on\` removes it)`
        : `self-heal is on: ${path} does not exist (\`lifeline selfheal off\` creates it)`,
    );
  } else {
    const did = state === "off" ? "created" : "removed";
    ctx.out.line(
      changed
        ? `self-heal is ${state}: ${did} ${path}`
        : `self-heal was already ${state} (${path})`,
    );
  }
  return state === "unknown" ? EXIT.error : EXIT.ok;
}
