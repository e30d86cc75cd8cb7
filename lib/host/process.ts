/**
 * The one way lifeline runs another program (git, tmux, ps, systemctl): output collected, stdin
 * closed or given, an optional deadline, and a missing program turned into one typed error that
 * callers can name in a one-line message.
 *
 * @module
 */

/** The program is not installed, or not on PATH. */
export class ProgramMissingError extends Error {
  override name = "ProgramMissingError";
  constructor(readonly program: string) {
    super(`${program} is not installed (not found on PATH)`);
  }
}

/** How a program ran. */
export interface ProgramResult {
  code: number;
  success: boolean;
  /** Killed at the deadline (or by a signal). */
  signal: Deno.Signal | null;
  stdout: string;
  /** The raw bytes of stdout, for binary output (git blobs). */
  stdoutBytes: Uint8Array;
  stderr: string;
}

/** Options for {@linkcode runProgram}. */
export interface RunProgramOptions {
  cwd?: string;
  /** Added to the inherited environment (or the whole of it, with `clearEnv`). */
  env?: Record<string, string>;
  clearEnv?: boolean;
  /** Bytes or text for stdin; stdin is closed when absent. */
  stdin?: string | Uint8Array;
  /** Kill the program after this long (SIGKILL); the result then carries the signal. */
  timeoutMs?: number;
  /** Where stdout goes instead of memory (closed at the end): a large blob, to a file. */
  stdoutTo?: WritableStream<Uint8Array>;
}

const decoder = new TextDecoder();

/** How long the pipes of a program killed at its deadline are read after the kill. */
const DRAIN_MS = 200;

/** Runs `program` with `args` and collects its output. Throws {@linkcode ProgramMissingError}. */
export async function runProgram(
  program: string,
  args: readonly string[],
  { cwd, env, clearEnv, stdin, timeoutMs, stdoutTo }: RunProgramOptions = {},
): Promise<ProgramResult> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args: [...args],
      stdin: stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
      ...(cwd ? { cwd } : {}),
      ...(env ? { env } : {}),
      ...(clearEnv ? { clearEnv } : {}),
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) throw new ProgramMissingError(program);
    throw error;
  }
  // A timer only when asked for: hooks that run a program pay for nothing they do not use.
  const killed = Promise.withResolvers<void>();
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // It exited meanwhile.
    }
    killed.resolve();
  }, timeoutMs);
  // A program killed at the deadline may have handed its stdout and stderr to another process,
  // which keeps them open (a tmux client gives them to its server: a stopped server would keep
  // the caller waiting for ever). Its output is then what came before, read a moment longer.
  const ended = killed.promise.then(() => new Promise<void>((r) => setTimeout(r, DRAIN_MS)));
  try {
    // stdin is written while stdout is read: a program that answers each line as it reads
    // (`git cat-file --batch`, `hash-object --stdin-paths`) stops reading once its output pipe is
    // full, and a writer that waited for all of stdin to go first would wait for ever.
    const writing = stdin === undefined ? Promise.resolve() : writeAll(child.stdin, stdin);
    const [stdout, stderr] = await Promise.all([
      stdoutTo
        ? child.stdout.pipeTo(stdoutTo).then(() => new Uint8Array())
        : drain(child.stdout, ended),
      drain(child.stderr, ended),
      writing,
    ]);
    const status = await child.status;
    return {
      code: status.code,
      success: status.success,
      signal: status.signal,
      stdout: decoder.decode(stdout),
      stdoutBytes: stdout,
      stderr: decoder.decode(stderr),
    };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** Writes `data` to a child's stdin and closes it; a program that exits first is no error. */
async function writeAll(stdin: WritableStream<Uint8Array>, data: string | Uint8Array) {
  const writer = stdin.getWriter();
  try {
    await writer.write(typeof data === "string" ? new TextEncoder().encode(data) : data);
    await writer.close();
  } catch {
    // The program exited before reading all of it; its exit status says what happened.
  }
}

/** Reads a stream to its end, or until `stop` settles: then what was read. */
async function drain(stream: ReadableStream<Uint8Array>, stop: Promise<void>) {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  const stopped = stop.then(() => null);
  for (;;) {
    const next = await Promise.race([reader.read(), stopped]);
    if (next === null) {
      await reader.cancel().catch(() => {});
      break;
    }
    if (next.done) break;
    chunks.push(next.value);
  }
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}
