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

const encoder = new TextEncoder();

function writeAll(writer: SyncWriter, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(writer.writeSync(bytes));
}

/** An {@linkcode Output} over two byte sinks; each call is written at once, in order. */
export function streamOutput(stdout: SyncWriter, stderr: SyncWriter): Output {
  return {
    line: (text) => writeAll(stdout, text + "\n"),
    json: (value) => writeAll(stdout, JSON.stringify(value) + "\n"),
    error: (text) => writeAll(stderr, text + "\n"),
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
