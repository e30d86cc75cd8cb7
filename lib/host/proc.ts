/**
 * Process identity: is a pid alive, and is it still the same program? A pid alone is not enough,
 * because pids are reused; the start time makes the identity unique.
 *
 * The answers come from `ps`, on Linux too: Deno lets a program read another process's `/proc`
 * entries only with `--allow-all`, which lifeline does not ask for. Where `ps` is missing
 * (Windows, minimal containers) the answer is "unknown", and callers stay on the safe side.
 *
 * @module
 */

import { runProgram } from "./process.ts";

/** A running process. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** The program's short name (`comm`), e.g. `claude`, `node`, `bash`. */
  command: string;
  /** When it started (`ps` lstart); compared for equality only. */
  started: string;
}

/** What `ps` says about a pid. */
export type ProcessLookup =
  | { kind: "running"; info: ProcessInfo }
  | { kind: "gone" }
  | { kind: "unknown" };

/** Looks a process up with `ps`. */
export async function lookupProcess(pid: number): Promise<ProcessLookup> {
  if (!Number.isSafeInteger(pid) || pid <= 0) return { kind: "gone" };
  if (Deno.build.os === "windows") return { kind: "unknown" };
  let result;
  try {
    result = await runProgram("ps", ["-o", "ppid=,lstart=,comm=", "-p", String(pid)]);
  } catch {
    return { kind: "unknown" }; // no ps
  }
  const output = result.stdout;
  if (!result.success && output.trim() === "") return { kind: "gone" };
  const info = parsePsLine(pid, output);
  return info ? { kind: "running", info } : { kind: "unknown" };
}

/** Parses `ps -o ppid=,lstart=,comm=` output, e.g. ` 123 Mon Nov 30 17:01:15 2026 claude`. */
export function parsePsLine(pid: number, line: string): ProcessInfo | undefined {
  const match = /^\s*(\d+)\s+(\w{3}\s+\w{3}\s+\d+\s+[\d:]+\s+\d{4})\s+(.+?)\s*$/.exec(line);
  if (!match) return undefined;
  const path = match[3]!;
  return {
    pid,
    ppid: Number(match[1]),
    command: path.slice(path.lastIndexOf("/") + 1), // macOS prints the full path
    started: match[2]!.replace(/\s+/g, " "),
  };
}

/** Shells that may sit between the agent and its hook (`sh -c "lifeline hook …"`). */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "fish", "ksh", "busybox"]);

/**
 * The agent that ran a hook: the hook's parent, or, when that is a shell, the nearest ancestor
 * that is not. The shell that ran the hook command exits with it; the agent lives on.
 */
export async function agentProcess(ppid: number): Promise<ProcessInfo | undefined> {
  const first = await lookupProcess(ppid);
  if (first.kind !== "running") return undefined;
  let info = first.info;
  for (let hops = 0; SHELLS.has(info.command) && info.ppid > 1 && hops < 4; hops++) {
    const parent = await lookupProcess(info.ppid);
    if (parent.kind !== "running") break;
    info = parent.info;
  }
  return info;
}

/** Whether the process recorded earlier still runs as the same program. */
export async function recordedProcessState(
  recorded: { pid: number; started?: string | null | undefined },
): Promise<"alive" | "dead" | "reused" | "unknown"> {
  const lookup = await lookupProcess(recorded.pid);
  if (lookup.kind !== "running") return lookup.kind === "gone" ? "dead" : "unknown";
  if (recorded.started && lookup.info.started !== recorded.started) return "reused";
  return "alive";
}

/** A process's parent pid and start time (clock ticks since boot), from `/proc` (Linux). */
export async function procStat(pid: number): Promise<{ ppid: number; start: number } | null> {
  if (!Number.isSafeInteger(pid) || pid <= 0 || Deno.build.os !== "linux") return null;
  let text: string;
  try {
    text = await Deno.readTextFile(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
  // The command name, field 2, is in parentheses and may hold spaces and parentheses itself.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const ppid = Number(fields[1]);
  const start = Number(fields[19]);
  return Number.isSafeInteger(ppid) && Number.isSafeInteger(start) ? { ppid, start } : null;
}

/**
 * A key that names one process for its whole life: its pid and start time. A pid that was reused
 * gets another key. Where the start time cannot be read, the pid alone.
 */
export async function processKey(pid: number): Promise<string> {
  const stat = await procStat(pid);
  if (stat) return `${pid}:${stat.start}`;
  const lookup = await lookupProcess(pid);
  return lookup.kind === "running"
    ? `${pid}:${lookup.info.started.replace(/\s+/g, "_")}`
    : `${pid}`;
}

/** True when `pid` is `ancestor` or runs under it (its parents, walked through `/proc`). */
export async function descendsFrom(pid: number, ancestor: number): Promise<boolean | null> {
  let current = pid;
  for (let hops = 0; hops < 32; hops++) {
    if (current === ancestor) return true;
    if (current <= 1) return false;
    const stat = await procStat(current);
    if (!stat) return hops === 0 ? null : false;
    current = stat.ppid;
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
