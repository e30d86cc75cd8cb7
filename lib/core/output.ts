/**
 * What commands print. Commands never write to the process's streams themselves: they get an
 * {@linkcode Output} from `main.ts` (real streams) or from a test ({@linkcode memoryOutput}).
 *
 * @module
 */

/** A byte sink such as `Deno.stdout`. */
export interface SyncWriter {
  writeSync(bytes: Uint8Array): number;
}

/** Line-oriented standard output and standard error. */
export interface Output {
  /** Writes `text` and a newline to standard output. */
  line(text: string): void;
  /** Writes `value` as one line of JSON to standard output. */
  json(value: unknown): void;
  /** Writes `text` and a newline to standard error. */
  error(text: string): void;
}

/**
 * Whoever read standard output has closed it (`lifeline status | head -1`): there is no one left
 * to print for. The command stops where it is and exits quietly (see `runCli`).
 */
export class StdoutClosedError extends Error {
  override name = "StdoutClosedError";
  constructor() {
    super("standard output was closed by its reader");
  }
}

const encoder = new TextEncoder();

function writeAll(writer: SyncWriter, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(writer.writeSync(bytes));
}

function writeOut(stdout: SyncWriter, text: string): void {
  try {
    writeAll(stdout, text);
  } catch (error) {
    if (error instanceof Deno.errors.BrokenPipe) throw new StdoutClosedError();
    throw error;
  }
}

/**
 * An {@linkcode Output} over two byte sinks; each call is written at once, in order. A closed
 * stdout throws {@linkcode StdoutClosedError}; a closed stderr is ignored (nowhere to say so).
 */
export function streamOutput(stdout: SyncWriter, stderr: SyncWriter): Output {
  return {
    line: (text) => writeOut(stdout, text + "\n"),
    json: (value) => writeOut(stdout, JSON.stringify(value) + "\n"),
    error: (text) => {
      try {
        writeAll(stderr, text + "\n");
      } catch {
        // The reader of stderr is gone too.
      }
    },
  };
}

/** An {@linkcode Output} that keeps everything in memory, for tests and embedding. */
export function memoryOutput(): Output & { stdout: string; stderr: string } {
  const output = {
    stdout: "",
    stderr: "",
    line(text: string) {
      output.stdout += text + "\n";
    },
    json(value: unknown) {
      output.stdout += JSON.stringify(value) + "\n";
    },
    error(text: string) {
      output.stderr += text + "\n";
    },
  };
  return output;
}
