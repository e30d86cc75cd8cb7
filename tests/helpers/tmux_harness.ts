/**
 * A private tmux server for one test, with fake agents in 160x50 panes (see fake_agent.ts).
 * Never touches the default server.
 *
 * @module
 */

import { REPO_DIR } from "./lifeline.ts";

/** One fake agent's pane. */
export interface AgentPane {
  id: string;
  session: string;
  screenFile: string;
  logFile: string;
}

/** What a fake agent received: one entry per read. */
export interface Received {
  at: number;
  text: string;
}

async function tmux(socket: string, args: string[]): Promise<string> {
  const result = await new Deno.Command("tmux", { args: ["-L", socket, ...args], stderr: "piped" })
    .output();
  if (!result.success) {
    throw new Error(`tmux ${args.join(" ")}: ${new TextDecoder().decode(result.stderr)}`);
  }
  return new TextDecoder().decode(result.stdout);
}

/** A tmux server of its own, in `dir`. Call `close()` when done. */
export class TmuxHarness {
  readonly socket = `lifeline-test-${crypto.randomUUID().slice(0, 8)}`;
  #count = 0;
  constructor(readonly dir: string) {}

  /** Starts a fake agent showing `screen` in a new session, and waits until it is drawn. */
  async addAgent(
    screen: string,
    { afterEnter, command = "claude" }: { afterEnter?: string; command?: string } = {},
  ): Promise<AgentPane> {
    const session = `agent${this.#count++}`;
    const screenFile = `${this.dir}/${session}.screen`;
    const logFile = `${this.dir}/${session}.log`;
    await Deno.writeTextFile(screenFile, screen);
    if (afterEnter !== undefined) await Deno.writeTextFile(`${screenFile}.after-enter`, afterEnter);
    const agent =
      `exec -a ${command} '${Deno.execPath()}' run --quiet --allow-read --allow-write ` +
      `'${REPO_DIR}/tests/helpers/fake_agent.ts' '${screenFile}' '${logFile}'`;
    await tmux(this.socket, [
      "new-session",
      "-d",
      "-s",
      session,
      "-x",
      "160",
      "-y",
      "50",
      `bash -c "${agent}"`,
    ]);
    const id = (await tmux(this.socket, ["list-panes", "-t", `=${session}`, "-F", "#{pane_id}"]))
      .trim();
    const pane = { id, session, screenFile, logFile };
    await this.waitForScreen(pane, firstWords(screen));
    return pane;
  }

  /** Replaces what a pane shows, and waits until it is drawn. */
  async setScreen(pane: AgentPane, screen: string): Promise<void> {
    await Deno.writeTextFile(pane.screenFile, screen);
    await this.waitForScreen(pane, firstWords(screen));
  }

  /** The pane's text as tmux captures it. */
  capture(pane: AgentPane): Promise<string> {
    return tmux(this.socket, ["capture-pane", "-p", "-t", pane.id]);
  }

  async waitForScreen(pane: AgentPane, text: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await this.capture(pane)).includes(text)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`pane ${pane.id} never showed ${JSON.stringify(text)}`);
  }

  /** Everything a fake agent received so far. */
  async received(pane: AgentPane): Promise<Received[]> {
    try {
      return (await Deno.readTextFile(pane.logFile)).trim().split("\n").filter(Boolean)
        .map((line) => JSON.parse(line));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return [];
      throw error;
    }
  }

  /** Kills a pane's session (the pane is gone). */
  async killPane(pane: AgentPane): Promise<void> {
    await tmux(this.socket, ["kill-session", "-t", `=${pane.session}`]);
  }

  /** The server's socket path, as `$TMUX` would name it. */
  async socketPath(): Promise<string> {
    return (await tmux(this.socket, ["list-sessions", "-F", "#{socket_path}"])).split("\n")[0]!;
  }

  async close(): Promise<void> {
    await tmux(this.socket, ["kill-server"]).catch(() => {});
  }
}

function firstWords(screen: string): string {
  const line = screen.split("\n").map((l) => l.trim()).find((l) => l.length > 0) ?? "";
  return line.slice(0, 20);
}

/** Runs `fn` with a harness in `dir`, closing the server afterwards. */
export async function withTmux<T>(dir: string, fn: (tmux: TmuxHarness) => Promise<T>): Promise<T> {
  const harness = new TmuxHarness(dir);
  try {
    return await fn(harness);
  } finally {
    await harness.close();
  }
}
