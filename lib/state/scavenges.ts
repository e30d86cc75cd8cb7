/**
 * The daemon's ledger of the handoffs it wrote: `scavenges/<root hash>-<session>.json` in
 * lifeline's own state directory, outside every project, holding the root, the session and the
 * SHA-256 of the handoff. `hook crash` offers a handoff to the next session only when the ledger
 * has it, byte for byte: a `sessions/<x>/status` of `scavenged` and a handoff that came with a
 * repository (committed by an agent's `git add -A`, or planted) would otherwise be read to a new
 * session, in lifeline's voice, as work to pick up.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { sha256Hex, shortHash } from "../core/text.ts";
import { stateDir } from "./layout.ts";
import { ownStateRoot } from "./own_log.ts";
import { readStateText, removeFile, writeFileAtomic } from "./store.ts";

type Env = Readonly<Record<string, string>>;

/** One handoff the daemon wrote. */
interface ScavengeEntry {
  root: string;
  session: string;
  sha256: string;
  at: string;
}

function entryPath(env: Env, root: string, session: string): string {
  return joinPath(
    stateDir(env),
    "scavenges",
    `${shortHash(root)}${shortHash(`\0${root}`)}-${session}.json`,
  );
}

/** Records that the daemon wrote `handoff` for `session` of `root` (a validated session id). */
export async function recordScavenge(
  env: Env,
  { root, session, handoff, now }: { root: string; session: string; handoff: string; now: number },
): Promise<void> {
  const entry: ScavengeEntry = {
    root,
    session,
    sha256: await sha256Hex(handoff),
    at: new Date(now).toISOString(),
  };
  await writeFileAtomic(entryPath(env, root, session), JSON.stringify(entry) + "\n", {
    root: await ownStateRoot(env),
  });
}

/** Whether the daemon wrote exactly `handoff` for `session` of `root`. */
export async function scavengedByDaemon(
  env: Env,
  { root, session, handoff }: { root: string; session: string; handoff: string },
): Promise<boolean> {
  let entry: Partial<ScavengeEntry>;
  try {
    const text = await readStateText(entryPath(env, root, session), {
      root: stateDir(env),
      maxBytes: 4096,
    });
    entry = JSON.parse(text);
  } catch {
    return false; // none (or not ours): the daemon did not write it
  }
  return entry.root === root && entry.session === session &&
    entry.sha256 === await sha256Hex(handoff);
}

/** Forgets a handoff once it was offered (a missing entry is fine). */
export async function forgetScavenge(env: Env, root: string, session: string): Promise<void> {
  await removeFile(entryPath(env, root, session), { root: stateDir(env) }).catch(() => {});
}
