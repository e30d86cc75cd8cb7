// Child process for the scavenger's memory tests, run with --v8-flags=--expose-gc. It prints how
// much of the heap the Scavenger still holds after a full collection, once fed one of:
//   <calls> <bytes>        Write calls of <bytes> each, with no results (killed while writing)
//   tasks <calls>          TaskCreate calls, each with the result that gives its task an id
import { Scavenger } from "../../lib/sessions/scavenger.ts";

if (Deno.args[0] === "tasks") {
  const gc = (globalThis as unknown as { gc: () => void }).gc;
  gc();
  const before = Deno.memoryUsage().heapUsed;
  const scavenger = new Scavenger();
  for (let i = 0; i < Number(Deno.args[1]); i++) {
    const id = `toolu_${i}`;
    scavenger.addRow({
      type: "assistant",
      timestamp: "t",
      message: {
        id: `m${i}`,
        content: [{
          type: "tool_use",
          id,
          name: "TaskCreate",
          input: { subject: `task number ${i} ${"x".repeat(250)}` },
        }],
      },
    });
    scavenger.addRow({
      type: "user",
      timestamp: "t",
      message: { content: [{ type: "tool_result", tool_use_id: id, content: `Task #${i}` }] },
      toolUseResult: { task: { id: String(i) } },
    });
  }
  gc();
  const retained = Deno.memoryUsage().heapUsed - before;
  const { todos, todosLeftOut } = scavenger.summary();
  Deno.stdout.writeSync(new TextEncoder().encode(
    JSON.stringify({ retained, todos: todos.length, todosLeftOut }) + "\n",
  ));
  Deno.exit(0);
}

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
