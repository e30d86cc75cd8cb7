// Child process for the scavenger's memory test: feeds a Scavenger `calls` Write calls of `bytes`
// each, with no results (a session killed while writing), and prints how much of the heap the
// Scavenger still holds after a full collection. Run with --v8-flags=--expose-gc.
import { Scavenger } from "../../lib/sessions/scavenger.ts";

const [calls, bytes] = Deno.args.map(Number) as [number, number];
const gc = (globalThis as unknown as { gc: () => void }).gc;
gc();
const before = Deno.memoryUsage().heapUsed;
const scavenger = new Scavenger();
for (let i = 0; i < calls; i++) {
  scavenger.addLine(JSON.stringify({
    type: "assistant",
    timestamp: "2026-11-30T10:00:00.000Z",
    message: {
      id: `m${i}`,
      content: [{
        type: "tool_use",
        id: `call-${i}`,
        name: "Write",
        input: {
          file_path: `/src/file-${i}.ts`,
          content: String.fromCharCode(97 + (i % 26)).repeat(bytes),
        },
      }],
    },
  }));
}
gc();
const retained = Deno.memoryUsage().heapUsed - before;
Deno.stdout.writeSync(new TextEncoder().encode(
  JSON.stringify({
    retained,
    files: scavenger.summary().files.length,
  }) + "\n",
));
