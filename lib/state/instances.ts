/**
 * The long-running commands that run now: each tmux watcher and stale-session daemon holds an
 * instance lock in lifeline's state directory (`watch/<server>.lock`, `daemon/<roots>.lock`) for
 * its whole life, with its pid beside it. A lock that cannot be taken is held: that process runs.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { stateDir } from "./layout.ts";
import { listNames, numberCodec, openStateFile, readState } from "./store.ts";

/** One running instance: its lock's name and its pid (null while it is being written). */
export interface RunningInstance {
  name: string;
  pid: number | null;
}

/** The instances whose locks in `dir` (below `root`) are held. */
export async function lockHolders(root: string, dir: string): Promise<RunningInstance[]> {
  const held: RunningInstance[] = [];
  for (const name of (await listNames(dir)).filter((n) => n.endsWith(".lock"))) {
    const file = await openStateFile(joinPath(dir, name), { root });
    try {
      if (await file.tryLock(true)) {
        await file.unlock();
      } else {
        const base = name.slice(0, -".lock".length);
        const pid = await readState(joinPath(dir, `${base}.pid`), numberCodec, { root });
        held.push({ name: base, pid: pid.kind === "ok" ? pid.value : null });
      }
    } finally {
      file.close();
    }
  }
  return held;
}

/** The tmux watchers and stale-session daemons running now. */
export async function runningInstances(
  env: Readonly<Record<string, string>>,
): Promise<{ watchers: RunningInstance[]; daemons: RunningInstance[] }> {
  const own = stateDir(env);
  return {
    watchers: await lockHolders(own, joinPath(own, "watch")),
    daemons: await lockHolders(own, joinPath(own, "daemon")),
  };
}
