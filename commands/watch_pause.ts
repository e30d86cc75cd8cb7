/**
 * `lifeline watch pause` and `lifeline watch resume`: the user's hands-off for one pane (or its
 * window), as the tmux user option `@lifeline off` that the watcher honours. One module holds
 * both: `commands/mod.ts` loads each from here.

 *
 * @module
 */

import { CliError, type CommandModule, type Context, EXIT, UsageError } from "../lib/core/cli.ts";
import { parseFlags } from "../lib/core/flags.ts";
import { paneInfo, setOptOut, type TmuxServer } from "../lib/host/tmux.ts";

const usage = (verb: string) =>
  `Usage: lifeline watch ${verb} [%PANE] [--window] [--socket NAME | --socket-path PATH] [--json]`;

const options = `Options:
  %PANE                the pane (default: $TMUX_PANE, the pane this runs in)
  --window             the pane's whole window
  --socket NAME        tmux server socket name (tmux -L)
  --socket-path PATH   tmux server socket path (tmux -S)
  --json               print {"pane", "session", "paused", "scope"}
  -h, --help`;

const pauseHelp = `${usage("pause")}

Stops \`lifeline watch tmux\` from typing into a pane: it sets the tmux user option
\`@lifeline off\` on the pane (or its window), which every watcher reads before it looks at the
pane and again before each keystroke. \`lifeline status\` lists paused panes. Undo it with
\`lifeline watch resume\`, or \`tmux set-option -p -u @lifeline\`.

${options}`;

const resumeHelp = `${usage("resume")}

Lets \`lifeline watch tmux\` look after a pane again that \`lifeline watch pause\` paused: it
clears the tmux user option \`@lifeline\` on the pane (or its window).

${options}`;

/** `lifeline watch pause`. */
export const pause: CommandModule = { help: pauseHelp, run: (ctx) => setPaused(ctx, true) };

/** `lifeline watch resume`. */
export const resume: CommandModule = { help: resumeHelp, run: (ctx) => setPaused(ctx, false) };

async function setPaused(ctx: Context, off: boolean): Promise<number> {
  const { values, positionals } = parseFlags(ctx.args, {
    window: { type: "boolean" },
    socket: { type: "string" },
    "socket-path": { type: "string" },
    json: { type: "boolean" },
  }, { maxPositionals: 1 });
  if (values.socket !== undefined && values["socket-path"] !== undefined) {
    throw new UsageError("use --socket or --socket-path, not both");
  }
  const pane = positionals[0] ?? ctx.env.TMUX_PANE;
  if (!pane) throw new UsageError("name the pane (%3), or run this inside it");
  if (!/^%\d+$/.test(pane)) throw new UsageError(`not a pane id: "${pane}" (expected %3)`);
  const server: TmuxServer = values.socket !== undefined
    ? { socketName: values.socket }
    : values["socket-path"] !== undefined
    ? { socketPath: values["socket-path"] }
    : {};
  const info = await paneInfo(server, pane);
  if (!info) {
    throw new CliError(
      `there is no pane ${pane} on this tmux server`,
      "list the panes with: tmux list-panes -a",
    );
  }
  const window = values.window === true;
  await setOptOut(server, pane, { off, window });
  const scope = window ? "window" : "pane";
  if (values.json) {
    ctx.out.json({ pane, session: info.session, paused: off, scope });
  } else if (off) {
    ctx.out.line(
      `paused ${scope} of ${pane} (${info.session}): lifeline watch tmux will not type into it ` +
        `until \`lifeline watch resume ${pane}${window ? " --window" : ""}\``,
    );
  } else {
    ctx.out.line(
      `resumed ${scope} of ${pane} (${info.session}): lifeline watch tmux looks after it again`,
    );
  }
  return EXIT.ok;
}
