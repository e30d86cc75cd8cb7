/**
 * Another session's hooks, as a separate process writing lifeline's state the way the hooks do
 * (locked counters, JSONL appends, atomic heartbeats with temp files), for rollback tests.
 *
 *   count <root> <n>   n rounds: a locked increment of sessions/agent2/fail-count-x.txt, one line
 *                      appended to logs/error-recovery.log, a heartbeat; prints "done"
 *   beat <root>        heartbeats and log lines until killed; prints "ready" first
 *
 * @module
 */

import {
  appendJsonLine,
  numberCodec,
  updateState,
  writeFileAtomic,
} from "../../lib/state/store.ts";

const [mode, root, arg] = Deno.args as [string, string, string | undefined];
const counter = `${root}/sessions/agent2/fail-count-x.txt`;
const log = `${root}/logs/error-recovery.log`;
const beat = `${root}/sessions/agent2/heartbeat`;

async function round(i: number): Promise<void> {
  await updateState(counter, numberCodec, (n) => (n ?? 0) + 1, {
    root,
    waitMs: 60_000,
    now: Date.now(),
  });
  await appendJsonLine(log, { ts: new Date().toISOString(), kind: "test", round: i }, { root });
  await writeFileAtomic(beat, `${Math.floor(Date.now() / 1000)}\n`, { root });
}

if (mode === "count") {
  for (let i = 1; i <= Number(arg); i++) {
    await round(i);
    await new Promise((r) => setTimeout(r, 2));
  }
  Deno.stdout.writeSync(new TextEncoder().encode("done\n"));
} else if (mode === "beat") {
  Deno.stdout.writeSync(new TextEncoder().encode("ready\n"));
  for (let i = 1;; i++) await round(i);
} else {
  throw new Error(`unknown mode ${mode}`);
}
