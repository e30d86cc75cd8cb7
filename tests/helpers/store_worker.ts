/**
 * A separate process that exercises lib/state/store.ts, for the multi-process tests.
 *
 *   increment <file> <times>   locked read-modify-write of a JSON counter, <times> times
 *   write-loop <file>          atomic writes of ever-larger JSON documents until killed
 *
 * @module
 */

import { dirName } from "../../lib/core/path.ts";
import { jsonCodec, updateState, writeFileAtomic } from "../../lib/state/store.ts";

const counterCodec = jsonCodec((value) => {
  const count = (value as { count?: unknown }).count;
  if (typeof count !== "number") throw new Error("not a counter");
  return { count };
});

const [mode, file, arg] = Deno.args;
const root = dirName(file!);
if (mode === "increment") {
  for (let i = 0; i < Number(arg); i++) {
    await updateState(file!, counterCodec, (current) => ({ count: (current?.count ?? 0) + 1 }), {
      root,
      waitMs: 60_000,
      now: Date.now(),
    });
  }
} else if (mode === "write-loop") {
  Deno.stdout.writeSync(new TextEncoder().encode("ready\n"));
  for (let seq = 0;; seq++) {
    // Large enough that a write takes several syscalls, so a kill lands in the middle of one.
    const document = { seq, filler: "x".repeat(200_000 + (seq % 7) * 10_000) };
    await writeFileAtomic(file!, JSON.stringify(document), { root });
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
