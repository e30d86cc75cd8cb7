/**
 * The watcher of one or more tmux servers: one {@linkcode Watcher} per server, each holding that
 * server's lock (one watcher per server, whatever process runs it) and keeping its state. Servers
 * come and go: a server that stops is waited for and said so; a server found later (a registered
 * session names its socket) is taken on; one another process watches is left to it.
 *
 * @module
 */

import { dirName, joinPath } from "../core/path.ts";
import { type ServerIdentity, serverIdentity, type TmuxServer } from "../host/tmux.ts";
import {
  acquireInstanceLock,
  type InstanceLock,
  quarantine,
  readState,
  writeFileAtomic,
} from "../state/store.ts";
import { ServerDownError, type WatchDeps, Watcher, type WatchSettings } from "./engine.ts";
import { watchFiles, watchStateCodec } from "./state.ts";
import type { PaneRecord } from "./watch_policy.ts";

/** What the fleet needs besides each watcher's own dependencies. */
export interface FleetDeps {
  env: Readonly<Record<string, string>>;
  pid: number;
  now(): number;
  /** lifeline's own state directory (locks and state live there). */
  ownRoot: string;
  /**
   * `/tmp/tmux-<uid>` (whatever `$TMUX_TMPDIR` says), where the lock of each server
   * process goes.
   */
  tmuxDir: string;
  /** The dependencies of the watcher of one server. */
  watcherDeps(server: TmuxServer): WatchDeps;
  /** Says something about the fleet itself (a server taken on, gone, back). */
  say(event: string, message: string, extra?: Record<string, unknown>): void;
}

/** One server and its watcher. */
interface Served {
  server: TmuxServer;
  socket: string;
  files: Awaited<ReturnType<typeof watchFiles>>;
  locks: InstanceLock[];
  /** The lock of the server process now on the socket, once it has been taken. */
  serverLock: { pid: number; lock: InstanceLock } | null;
  watcher: Watcher;
  pid: number | null;
  down: boolean;
  /** The server named on the command line (or the default one): waited for when it stops. */
  primary: boolean;
}

/** Loads a server's saved state: its panes, when they belong to this very server process. */
async function loadPanes(
  deps: FleetDeps,
  files: Served["files"],
  identity: ServerIdentity | null,
  dryRun: boolean,
): Promise<Record<string, PaneRecord>> {
  const saved = await readState(files.state, watchStateCodec, { root: deps.ownRoot });
  if (saved.kind === "corrupt" && !dryRun) {
    await quarantine(files.state, { root: deps.ownRoot, now: deps.now() });
  }
  return saved.kind === "ok" && saved.value.server.pid === identity?.pid ? saved.value.panes : {};
}

/** Another watcher holds a lock this one needs: its pid, and the lock's file. */
export interface HeldLock {
  heldBy: number | null;
  lock: string;
}

/** Takes a lock, or says who holds it and where. */
async function takeLock(
  path: string,
  pid: number,
  root: string,
): Promise<{ lock: InstanceLock } | HeldLock> {
  const taken = await acquireInstanceLock(path, pid, { root });
  return "heldBy" in taken ? { heldBy: taken.heldBy, lock: `${path}.lock` } : taken;
}

/**
 * The lock beside a server's socket (`<socket>.lifeline-watch.lock`, in tmux's own directory),
 * or null where that directory cannot take one (it does not exist yet, is not writable).
 */
async function socketLock(
  socket: string,
  pid: number,
): Promise<{ lock: InstanceLock } | HeldLock | null> {
  const real = await Deno.realPath(socket).catch(() => socket);
  try {
    return await takeLock(`${real}.lifeline-watch`, pid, dirName(real));
  } catch {
    return null;
  }
}

/**
 * The lock of one tmux server process (`lifeline-watch-server-<pid>.lock` in tmux's directory for
 * this user): every path to its socket (a hard link, a socket moved or renamed) leads to the same
 * process, so two watchers that name one server two ways still meet here. Null where that
 * directory is not this user's own (tmux refuses such a directory too).
 */
async function serverProcessLock(
  dir: string,
  serverPid: number,
  pid: number,
): Promise<{ lock: InstanceLock } | HeldLock | null> {
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const info = await Deno.lstat(dir);
    if (!info.isDirectory || (info.mode ?? 0) & 0o077 || info.uid !== Deno.uid()) return null;
    return await takeLock(joinPath(dir, `lifeline-watch-server-${serverPid}`), pid, dir);
  } catch {
    return null;
  }
}

/** Watches a set of tmux servers. */
export class Fleet {
  readonly served = new Map<string, Served>();
  /** Servers another watcher has: said once. */
  #skipped = new Set<string>();
  #deps: FleetDeps;
  #settings: WatchSettings;

  constructor(deps: FleetDeps, settings: WatchSettings) {
    this.#deps = deps;
    this.#settings = settings;
  }

  /**
   * Takes on a server when it is new: its lock (unless a dry run), its state, a watcher. Returns
   * the served entry, or a reason it is not watched here.
   */
  async add(
    server: TmuxServer,
    socket: string,
    { primary = true }: { primary?: boolean } = {},
  ): Promise<Served | HeldLock> {
    const files = await watchFiles(this.#deps.env, socket);
    const known = this.served.get(files.base);
    if (known) return known;
    const locks: InstanceLock[] = [];
    if (!this.#settings.dryRun) {
      const acquired = await takeLock(files.base, this.#deps.pid, this.#deps.ownRoot);
      if ("heldBy" in acquired) return acquired;
      locks.push(acquired.lock);
      // A second lock beside the socket: a watcher with another state directory (another HOME,
      // XDG_STATE_HOME) is still one of this server's watchers.
      const beside = await socketLock(socket, this.#deps.pid);
      if (beside && "heldBy" in beside) {
        await acquired.lock.release();
        return beside;
      }
      if (beside) locks.push(beside.lock);
    }
    const identity = await serverIdentity(server);
    const panes = await loadPanes(this.#deps, files, identity, this.#settings.dryRun);
    const served: Served = {
      server,
      socket,
      files,
      locks,
      serverLock: null,
      watcher: new Watcher(this.#deps.watcherDeps(server), this.#settings, panes),
      pid: identity?.pid ?? null,
      down: false,
      primary,
    };
    if (identity) {
      const held = await this.#holdServer(served, identity.pid);
      if (held) {
        for (const lock of locks) await lock.release();
        return held;
      }
    }
    this.served.set(files.base, served);
    // The first server is announced by the caller, with what else it watches and where it logs.
    if (primary) return served;
    this.#deps.say(
      "start",
      `watching tmux server ${socket}${
        served.pid ? ` (pid ${served.pid})` : " (not running yet)"
      }` +
        `; state ${this.#settings.dryRun ? "- (dry run: none written)" : files.state}`,
      { socket, server_pid: served.pid, state_file: this.#settings.dryRun ? null : files.state },
    );
    return served;
  }

  /** Takes on a server found by discovery; one watched by another process is said once. */
  async discovered(server: TmuxServer, socket: string): Promise<void> {
    const added = await this.add(server, socket, { primary: false });
    if ("heldBy" in added && !this.#skipped.has(socket)) {
      this.#skipped.add(socket);
      this.#deps.say(
        "skipped",
        `tmux server ${socket} is watched by another watcher (pid ${added.heldBy ?? "unknown"})`,
        { socket },
      );
    }
  }

  /**
   * Scans every server once and saves its state. A server that does not answer is waited for
   * (said once); with `once`, that is an error the caller reports.
   */
  async scan({ once }: { once: boolean }): Promise<void> {
    for (const served of this.served.values()) {
      try {
        const identity = await serverIdentity(served.server);
        if (!identity) throw new ServerDownError("no server");
        const held = await this.#holdServer(served, identity.pid);
        if (held) {
          // The same server reached by another path (a hard link to its socket): its watcher
          // types there; this one does not scan it.
          if (!this.#skipped.has(served.socket)) {
            this.#skipped.add(served.socket);
            this.#deps.say(
              "skipped",
              `tmux server ${served.socket} (pid ${identity.pid}) is watched by another watcher ` +
                `(pid ${held.heldBy ?? "unknown"}) through another path to its socket`,
              { socket: served.socket, server_pid: identity.pid },
            );
          }
          continue;
        }
        this.#skipped.delete(served.socket);
        if (identity.pid !== served.pid) {
          // Another server on the socket: what was known about the old one's panes is not its.
          if (served.pid !== null) {
            served.watcher = new Watcher(this.#deps.watcherDeps(served.server), this.#settings, {});
          }
          served.pid = identity.pid;
        }
        if (served.down) {
          this.#deps.say("server_back", `the tmux server is back (pid ${identity.pid})`, {
            socket: served.socket,
          });
        }
        served.down = false;
        await served.watcher.scan();
      } catch (error) {
        if (!(error instanceof ServerDownError)) throw error;
        if (!served.primary) {
          // A server only a session named: it is gone; if a session names it again, it is back.
          for (const lock of served.locks) await lock.release();
          await served.serverLock?.lock.release();
          this.served.delete(served.files.base);
          this.#deps.say("server_gone", `no longer watching ${served.socket}: its server is gone`, {
            socket: served.socket,
          });
          continue;
        }
        if (once) throw error;

        if (!served.down) {
          this.#deps.say(
            "server_down",
            `the tmux server on ${served.socket} is not running; waiting for it`,
            { socket: served.socket },
          );
        }
        served.down = true;
      }
      await this.#save(served);
    }
  }

  /**
   * Holds the lock of the server process on a served socket (a new process: the old one's lock is
   * let go). Returns who holds it when another watcher does; nothing in a dry run, which types
   * nothing.
   */
  async #holdServer(served: Served, serverPid: number): Promise<HeldLock | null> {
    if (this.#settings.dryRun || served.serverLock?.pid === serverPid) return null;
    await served.serverLock?.lock.release();
    served.serverLock = null;
    const taken = await serverProcessLock(this.#deps.tmuxDir, serverPid, this.#deps.pid);
    if (taken && "heldBy" in taken) return taken;
    if (taken) served.serverLock = { pid: serverPid, lock: taken.lock };
    return null;
  }

  async #save(served: Served): Promise<void> {
    if (this.#settings.dryRun || served.pid === null) return;
    await writeFileAtomic(
      served.files.state,
      watchStateCodec.format({
        version: 2,
        server: { socket: served.socket, pid: served.pid },
        panes: Object.fromEntries(served.watcher.records),
      }),
      { root: this.#deps.ownRoot },
    );
  }

  /** Milliseconds until the next scan of any server. */
  nextWaitMs(intervalMs: number): number {
    return Math.min(
      intervalMs,
      ...[...this.served.values()].map((s) => s.watcher.nextWaitMs(intervalMs)),
    );
  }

  /** Releases every lock. */
  async close(): Promise<void> {
    for (const served of this.served.values()) {
      for (const lock of served.locks) await lock.release();
      await served.serverLock?.lock.release();
    }
  }
}

/** Where a watcher's per-pane recovery log goes when no session is joined to the pane. */
export function unregisteredLog(ownRoot: string): string {
  return joinPath(ownRoot, "logs", "error-recovery.log");
}
