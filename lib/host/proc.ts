/**
 * Process identity: is a pid alive, and is it still the same program? A pid alone is not enough,
 * because pids are reused; the start time makes the identity unique.
 *
 * Start times are numbers, never text: `ps -o lstart` prints the local time of whoever runs it,
 * so an agent under `TZ=Asia/Tokyo` and a daemon under UTC would disagree about the same process.
 * On Linux the answers come from `/proc/<pid>/stat` (the binary runs with `--allow-all`, the only
 * way Deno lets a program read `/proc`), with no process spawned; elsewhere from `ps` run in UTC.
 * Where neither works (Windows, minimal containers) the answer is "unknown", and callers stay on
 * the safe side.
 *
 * @module
 */

import { importLater } from "../core/lazy.ts";
import type * as Process from "./process.ts";

/** A running process. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** The program's short name (`comm`), e.g. `claude`, `node`, `bash`. */
  command: string;
  /** When it started, in epoch milliseconds. */
  startedMs: number;
  /**
   * Linux only: `<boot id>/<clock ticks since boot>`, an exact identity that a wall-clock step
   * (NTP, a resumed VM) cannot shift the way it shifts `startedMs`.
   */
  startId?: string;
}

/** What can be found out about a pid. */
export type ProcessLookup =
  | { kind: "running"; info: ProcessInfo }
  | { kind: "gone" }
  | { kind: "unknown" };

/**
 * Clock ticks per second of `/proc/<pid>/stat` (`sysconf(_SC_CLK_TCK)`). Deno cannot call
 * sysconf; the kernel fixes USER_HZ at 100 on every architecture Deno runs on.
 */
const CLOCK_TICKS_PER_SECOND = 100;

let bootFacts: { btimeMs: number; bootId: string } | undefined | null = null;

/**
 * The boot time (`btime` in `/proc/stat`) and boot id, read once per process. The `/proc` files are
 * read synchronously, here and below: the kernel answers at once, and a hook pays for every
 * asynchronous call.
 */
function linuxBoot(): { btimeMs: number; bootId: string } | undefined {
  if (bootFacts !== null) return bootFacts;
  try {
    const stat = Deno.readTextFileSync("/proc/stat");
    const bootId = Deno.readTextFileSync("/proc/sys/kernel/random/boot_id");
    const btime = /^btime (\d+)$/m.exec(stat)?.[1];
    bootFacts = btime ? { btimeMs: Number(btime) * 1000, bootId: bootId.trim() } : undefined;
  } catch {
    bootFacts = undefined;
  }
  return bootFacts;
}

/**
 * Parses `/proc/<pid>/stat`. The name (field 2) is in parentheses and may itself hold spaces and
 * parentheses, so the fields after it are counted from the last `)`.
 */
export function parseProcStat(
  text: string,
  boot: { btimeMs: number; bootId: string },
): (ProcessInfo & { state: string }) | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const fields = text.slice(close + 2).split(" ");
  // fields[0] is field 3 (state), fields[1] field 4 (ppid), fields[19] field 22 (starttime).
  const ppid = Number(fields[1]);
  const ticks = Number(fields[19]);
  if (!Number.isSafeInteger(pid) || !Number.isSafeInteger(ppid) || !Number.isSafeInteger(ticks)) {
    return undefined;
  }
  return {
    pid,
    ppid,
    command: text.slice(open + 1, close),
    state: fields[0] ?? "",
    startedMs: boot.btimeMs + Math.round(ticks * 1000 / CLOCK_TICKS_PER_SECOND),
    startId: `${boot.bootId}/${ticks}`,
  };
}

function lookupLinux(pid: number): ProcessLookup | undefined {
  const boot = linuxBoot();
  if (!boot) return undefined;
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kind: "gone" };
    return undefined; // /proc not readable here: ask ps
  }
  const parsed = parseProcStat(text, boot);
  if (!parsed) return undefined;
  // A zombie has exited; only its parent has not collected it yet.
  if (parsed.state === "Z" || parsed.state === "X") return { kind: "gone" };
  const { state: _, ...info } = parsed;
  return { kind: "running", info };
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * An `lstart` time (`Mon Nov 30 17:01:15 2026`) read as UTC wall-clock time, in epoch ms; NaN when
 * it is not one.
 */
export function lstartAsUtc(text: string): number {
  const match = /^\w{3} +(\w{3}) +(\d{1,2}) +(\d{1,2}):(\d{2}):(\d{2}) +(\d{4})$/.exec(text.trim());
  const month = match ? MONTHS.indexOf(match[1]!) : -1;
  if (!match || month < 0) return NaN;
  const [, , day, hours, minutes, seconds, year] = match.map(Number) as number[];
  return Date.UTC(year!, month, day!, hours!, minutes!, seconds!);
}

/** Parses `ps -o ppid=,lstart=,comm=` output run under `TZ=UTC`, e.g. ` 123 Mon Nov 30 17:01:15 2026 claude`. */
export function parsePsLine(pid: number, line: string): ProcessInfo | undefined {
  const match = /^\s*(\d+)\s+(\w{3}\s+\w{3}\s+\d+\s+[\d:]+\s+\d{4})\s+(.+?)\s*$/.exec(line);
  if (!match) return undefined;
  const startedMs = lstartAsUtc(match[2]!.replace(/\s+/g, " "));
  if (Number.isNaN(startedMs)) return undefined;
  const path = match[3]!;
  return {
    pid,
    ppid: Number(match[1]),
    command: path.slice(path.lastIndexOf("/") + 1), // macOS prints the full path
    startedMs,
  };
}

async function lookupPs(pid: number): Promise<ProcessLookup> {
  let result;
  try {
    // Loaded here: on Linux no hook needs it, and every module costs start-up time.
    const { runProgram } = await importLater<typeof Process>("./process.ts", import.meta.url);
    // UTC and the C locale: the start time is then the same text whoever runs ps, and parseable.
    result = await runProgram("ps", ["-o", "ppid=,lstart=,comm=", "-p", String(pid)], {
      env: { TZ: "UTC", LC_ALL: "C" },
    });
  } catch {
    return { kind: "unknown" }; // no ps
  }
  const output = result.stdout;
  if (!result.success && output.trim() === "") return { kind: "gone" };
  const info = parsePsLine(pid, output);
  return info ? { kind: "running", info } : { kind: "unknown" };
}

/** Looks a process up: `/proc` on Linux, `ps` elsewhere (or when `/proc` cannot be read). */
export async function lookupProcess(pid: number): Promise<ProcessLookup> {
  if (!Number.isSafeInteger(pid) || pid <= 0) return { kind: "gone" };
  if (Deno.build.os === "windows") return { kind: "unknown" };
  if (Deno.build.os === "linux") {
    const found = lookupLinux(pid);
    if (found) return found;
  }
  return await lookupPs(pid);
}

/**
 * Programs that may sit between the agent and its hook and are not the agent: the shell that runs
 * the hook command (`sh -c "lifeline hook …"`), and wrappers a user puts in front of it
 * (`timeout 60 lifeline hook heartbeat`). Those that exec their command leave no trace; those that
 * stay as the parent (`timeout`, a shell with more to do) are walked past. A list can never name
 * every launcher (the npm `deno` shim is `node`, `strace` stays too): see {@linkcode agentProcess}.
 */
const WRAPPERS = new Set([
  "sh",
  "bash",
  "dash",
  "zsh",
  "fish",
  "ksh",
  "mksh",
  "tcsh",
  "csh",
  "busybox",
  "timeout",
  "env",
  "nice",
  "nohup",
  "stdbuf",
  "setsid",
  "ionice",
  "chrt",
  "taskset",
  "time",
  "flock",
  "strace",
  "ltrace",
]);

/** How far up the walk goes before it settles for what it has. */
const MAX_ANCESTORS = 16;

/** A process's argv, from `/proc/<pid>/cmdline` (Linux); null where it cannot be read. */
async function commandLine(pid: number): Promise<string[] | null> {
  if (Deno.build.os !== "linux") return null;
  try {
    const text = await Deno.readTextFile(`/proc/${pid}/cmdline`);
    return text.split("\0").filter((word) => word !== "").slice(0, 64);
  } catch {
    return null;
  }
}

/** Whether a word of a command line names `command`: `claude`, `/usr/bin/claude`, `…/claude-code/cli.js`. */
function names(word: string | undefined, command: string): boolean {
  if (!word) return false;
  const base = word.slice(word.lastIndexOf("/") + 1).replace(/\.(?:exe|js|cjs|mjs)$/, "");
  return base === command || word.includes(`/${command}-code/`);
}

/** What the walk up from a hook needs to know. */
export interface AgentSearch {
  /** Programs that are the agent (`watch.agentCommands`: `claude`). */
  agentCommands: readonly string[];
  /**
   * lifeline's hook names: a process whose command line holds `hook <name>` as two words launched
   * this hook (`node bin.cjs run main.ts hook heartbeat`, `strace … hook heartbeat`), and is not
   * the agent, whatever its program.
   */
  hookNames: readonly string[];
}

/**
 * The agent that ran a hook, walking up from the hook's parent past shells, wrappers and launchers
 * of this hook: the nearest ancestor that is an agent command (by its name, or by what its command
 * line runs: `node /usr/bin/claude`), looked for up to the second program that is none of those;
 * failing that, the first such program. A short-lived parent is so never recorded as the agent:
 * it exits with the hook, and the agent lives on. The walk stops at that second program so that a
 * stand-in agent run under a real one (a test suite run from a Claude Code session) is not taken
 * for the agent above it.
 */
export async function agentProcess(
  ppid: number,
  { agentCommands, hookNames }: AgentSearch,
): Promise<ProcessInfo | undefined> {
  const first = await lookupProcess(ppid);
  if (first.kind !== "running") return undefined;
  let fallback: ProcessInfo | undefined;
  let info = first.info;
  for (let hops = 0; hops < MAX_ANCESTORS; hops++) {
    const argv = await commandLine(info.pid);
    const isAgent = agentCommands.some((command) =>
      info.command === command || names(argv?.[0], command) || names(argv?.[1], command)
    );
    if (isAgent) return info;
    const launcher = argv?.some((word, i) => word === "hook" && hookNames.includes(argv[i + 1]!));
    if (!WRAPPERS.has(info.command) && !launcher) {
      if (fallback) break;
      fallback = info;
    }
    if (info.ppid <= 1) break;
    const parent = await lookupProcess(info.ppid);
    if (parent.kind !== "running") break;
    info = parent.info;
  }
  return fallback ?? info;
}

let namespace: number | null | undefined;

/**
 * Linux: the inode of this process's pid namespace (`/proc/self/ns/pid`), the one its pids are
 * numbered in; null elsewhere. A pid recorded in another (a devcontainer with the project
 * mounted) means nothing here: looking it up in this `/proc` finds some other process, or none.
 */
export function pidNamespace(): number | null {
  if (namespace !== undefined) return namespace;
  namespace = null;
  if (Deno.build.os === "linux") {
    try {
      const inode = /\[(\d+)\]/.exec(Deno.readLinkSync("/proc/self/ns/pid"))?.[1];
      if (inode !== undefined) namespace = Number(inode);
    } catch {
      // No /proc here.
    }
  }
  return namespace;
}

/** Where a process runs: what tells its pids apart from another machine's or container's. */
export interface HostIdentity {
  hostname: string;
  pidNamespace: number | null;
}

/**
 * Whether a pid recorded where `recorded` says can be looked up here, on host `hostname`: not when
 * it was recorded on another host (a project shared between machines) or in another pid
 * namespace. What was not recorded does not count against it.
 */
export function sameHost(
  recorded: { hostname?: string | null | undefined; pidNamespace?: number | null | undefined },
  hostname: string,
): boolean {
  if (recorded.hostname && hostname && recorded.hostname !== hostname) return false;
  const local = pidNamespace();
  return !(typeof recorded.pidNamespace === "number" && local !== null &&
    recorded.pidNamespace !== local);
}

/** A recorded process identity, as `session.json` keeps it. */
export interface RecordedProcess {
  pid: number;
  /** Epoch ms; or, in records written by earlier versions, a `ps -o lstart` text in an unknown zone. */
  started?: number | string | null | undefined;
  startId?: string | null | undefined;
}

/** Start times this close are the same process: `ps` reports whole seconds. */
const START_TOLERANCE_MS = 2000;

/**
 * Whether a legacy `lstart` text names the same start as `startedMs`. The text is local time in
 * the zone of the hook that wrote it, which was not recorded; every zone's offset is a multiple of
 * 15 minutes within ±14 hours, so the text matches when it is `startedMs` shifted by such an
 * offset. A live agent is then never taken for a reused pid whatever its zone was.
 */
function legacyStartMatches(lstart: string, startedMs: number): boolean {
  const wall = lstartAsUtc(lstart);
  if (Number.isNaN(wall)) return true; // unreadable: no evidence of reuse
  const offset = wall - Math.floor(startedMs / 1000) * 1000;
  if (Math.abs(offset) > 14 * 3600_000 + START_TOLERANCE_MS) return false;
  const quarter = 15 * 60_000;
  const off = Math.abs(offset - Math.round(offset / quarter) * quarter);
  return off <= START_TOLERANCE_MS;
}

/** Whether `info` is the process that was recorded (same pid assumed). */
export function sameProcess(recorded: RecordedProcess, info: ProcessInfo): boolean {
  if (recorded.startId && info.startId) return recorded.startId === info.startId;
  if (typeof recorded.started === "number") {
    return Math.abs(recorded.started - info.startedMs) <= START_TOLERANCE_MS;
  }
  if (typeof recorded.started === "string" && recorded.started !== "") {
    return legacyStartMatches(recorded.started, info.startedMs);
  }
  return true; // nothing recorded to compare
}

/** Whether the process recorded earlier still runs as the same program. */
export async function recordedProcessState(
  recorded: RecordedProcess,
): Promise<"alive" | "dead" | "reused" | "unknown"> {
  const lookup = await lookupProcess(recorded.pid);
  if (lookup.kind !== "running") return lookup.kind === "gone" ? "dead" : "unknown";
  return sameProcess(recorded, lookup.info) ? "alive" : "reused";
}

/**
 * A key that names one process for its whole life: its pid and start time. A pid that was reused
 * gets another key. Where the start time cannot be read, the pid alone.
 */
export async function processKey(pid: number): Promise<string> {
  const lookup = await lookupProcess(pid);
  if (lookup.kind !== "running") return `${pid}`;
  return `${pid}:${lookup.info.startId ?? lookup.info.startedMs}`;
}

/** True when `pid` is `ancestor` or runs under it (its parents); null when `pid` cannot be read. */
export async function descendsFrom(pid: number, ancestor: number): Promise<boolean | null> {
  let current = pid;
  for (let hops = 0; hops < 32; hops++) {
    if (current === ancestor) return true;
    if (current <= 1) return false;
    const lookup = await lookupProcess(current);
    if (lookup.kind !== "running") return hops === 0 && lookup.kind === "unknown" ? null : false;
    current = lookup.info.ppid;
  }
  return false;
}

/**
 * Pids of processes other than `self` that hold a lock (`flock`, POSIX `lockf`/`fcntl`, OFD) on
 * the file with inode `ino`, from `/proc/locks`; null where that cannot be read (not Linux).
 * Matched on the inode alone: a lock on a same-numbered file elsewhere errs on the safe side.
 */
export async function otherLockHolders(ino: number, self: number): Promise<number[] | null> {
  let text: string;
  try {
    text = await Deno.readTextFile("/proc/locks");
  } catch {
    return null;
  }
  const holders: number[] = [];
  // "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF" (a blocked waiter adds "->" first).
  for (const line of text.split("\n")) {
    const fields = line.replace("->", "").trim().split(/\s+/);
    const pid = Number(fields[4]);
    const inode = Number(fields[5]?.split(":")[2]);
    if (inode === ino && pid !== self) holders.push(pid);
  }
  return holders;
}
