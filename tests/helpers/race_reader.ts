/**
 * A separate process that reads one path over and over for a while, the way lifeline's readers
 * do, and prints how the reads went as JSON ({ ok, refused, missing }). A reader that blocks in
 * an open never prints: the test that runs it kills it at its deadline and fails.
 *
 *   deno run -A race_reader.ts <reader> <path> <root> <milliseconds>
 *
 * Readers: small (readSmallFileSync), state-sync (readStateTextSync), state (readStateText),
 * transcript (openTranscript, then a read), config (loadConfig of the project at <root>).
 *
 * @module
 */

import { openTranscript } from "../../lib/claude/transcript.ts";
import { readSmallFileSync } from "../../lib/state/store.ts";
import { loadConfig } from "../../lib/state/config.ts";
import { readStateText, readStateTextSync } from "../../lib/state/store.ts";

const [reader, path, root, ms] = Deno.args as [string, string, string, string];
const env = { HOME: root };

const READERS: Record<string, () => Promise<unknown> | unknown> = {
  small: () => {
    if (readSmallFileSync(path) === undefined) throw new Deno.errors.NotFound();
  },
  "state-sync": () => readStateTextSync(path, { root }),
  state: () => readStateText(path, { root }),
  transcript: async () => {
    const file = await openTranscript(path);
    try {
      await file.read(new Uint8Array(64));
    } finally {
      file.close();
    }
  },
  config: () => loadConfig(env, root),
};

const read = READERS[reader];
if (!read) throw new Error(`unknown reader ${reader}`);
const counts = { ok: 0, refused: 0, missing: 0 };
const until = Date.now() + Number(ms);
while (Date.now() < until) {
  try {
    await read();
    counts.ok++;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) counts.missing++;
    else counts.refused++;
  }
}
Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(counts) + "\n"));
