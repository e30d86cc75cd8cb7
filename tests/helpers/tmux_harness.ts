/**
 * A private tmux server for one test, with fake agents in panes of any size (160x50 unless a
 * test asks otherwise; see fake_agent.ts).
 * Never touches the default server.
 *
 * @module
 */

import { REPO_DIR } from "./lifeline.ts";
import { withTempDir } from "./temp.ts";

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

/** How a fake agent starts. */
export interface AgentOptions {
  /** The screen it shows once Enter arrives. */
  afterEnter?: string;
  /** The screen it shows once the first byte arrives. */
  onFirstKey?: string;
  /** The name tmux reports as the pane's command (`claude` by default). */
  command?: string;
  width?: number;
  height?: number;
}

/** A tmux server of its own, in `dir`. Call `close()` when done. */
export class TmuxHarness {
  readonly socket = `lifeline-test-${crypto.randomUUID().slice(0, 8)}`;
  #count = 0;
  constructor(readonly dir: string) {}

  /** Starts a fake agent showing `screen` in a new session, and waits until it is drawn. */
  async addAgent(screen: string, options: AgentOptions = {}): Promise<AgentPane> {
    const { width = 160, height = 50 } = options;
    const session = `agent${this.#count++}`;
    const files = await this.#agentFiles(session, screen, options);
    await tmux(this.socket, [
      "new-session",
      "-d",
      "-s",
      session,
      "-x",
      String(width),
      "-y",
      String(height),
      this.#agentCommand(files, options.command ?? "claude"),
    ]);
    const id = (await tmux(this.socket, ["list-panes", "-t", `=${session}`, "-F", "#{pane_id}"]))
      .trim();
    const pane = { id, session, ...files };
    await this.waitForScreen(pane, firstWords(screen));
    return pane;
  }

  /** Starts another fake program in the same window as `beside`, side by side (`split -h`). */
  async splitAgent(
    beside: AgentPane,
    screen: string,
    options: AgentOptions = {},
  ): Promise<AgentPane> {
    const name = `${beside.session}-split${this.#count++}`;
    const files = await this.#agentFiles(name, screen, options);
    const id = (await tmux(this.socket, [
      "split-window",
      "-h",
      "-d",
      "-P",
      "-F",
      "#{pane_id}",
      "-t",
      beside.id,
      this.#agentCommand(files, options.command ?? "claude"),
    ])).trim();
    const pane = { id, session: beside.session, ...files };
    await this.waitForScreen(pane, firstWords(screen));
    return pane;
  }

  /** Runs a tmux command on this harness's server. */
  run(args: string[]): Promise<string> {
    return tmux(this.socket, args);
  }

  async #agentFiles(name: string, screen: string, options: AgentOptions) {
    const screenFile = `${this.dir}/${name}.screen`;
    const logFile = `${this.dir}/${name}.log`;
    await Deno.writeTextFile(screenFile, screen);
    if (options.afterEnter !== undefined) {
      await Deno.writeTextFile(`${screenFile}.after-enter`, options.afterEnter);
    }
    if (options.onFirstKey !== undefined) {
      await Deno.writeTextFile(`${screenFile}.on-first-key`, options.onFirstKey);
    }
    return { screenFile, logFile };
  }

  #agentCommand(files: { screenFile: string; logFile: string }, command: string): string {
    const agent =
      `exec -a ${command} '${Deno.execPath()}' run --quiet --allow-read --allow-write ` +
      `'${REPO_DIR}/tests/helpers/fake_agent.ts' '${files.screenFile}' '${files.logFile}'`;
    return `bash -c "${agent}"`;
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

  /** All a fake agent received so far, as one text. */
  async typed(pane: AgentPane): Promise<string> {
    return (await this.received(pane)).map((r) => r.text).join("");
  }

  /** Kills a pane's session (the pane is gone). */
  async killPane(pane: AgentPane): Promise<void> {
    await tmux(this.socket, ["kill-session", "-t", `=${pane.session}`]);
  }

  /** The server's socket path, as `$TMUX` would name it. */
  async socketPath(): Promise<string> {
    return (await tmux(this.socket, ["list-sessions", "-F", "#{socket_path}"])).split("\n")[0]!;
  }

  /** Kills the server and waits until it is gone (a new one can then start on the socket). */
  async close(): Promise<void> {
    await tmux(this.socket, ["kill-server"]).catch(() => {});
    for (let i = 0; i < 100; i++) {
      try {
        await tmux(this.socket, ["list-sessions"]);
      } catch (error) {
        if (/no server running|error connecting/i.test(String(error))) return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
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

/** A test with its own temporary directory and its own tmux server (not on Windows). */
export function tmuxTest(
  name: string,
  fn: (dir: string, tmux: TmuxHarness) => Promise<void>,
): void {
  Deno.test({
    name,
    ignore: Deno.build.os === "windows",
    fn: () => withTempDir((dir) => withTmux(dir, (tmux) => fn(dir, tmux))),
  });
}
