/**
 * The scan `hook crash` runs at session start: loop states, claim locks, an interrupted plan and
 * unread handoffs. It repairs what is stale (under the state protocols of DESIGN §6) and returns
 * findings for the context block and the recovery log.
 *
 * @module
 */

import type * as JsonText from "../core/json_text.ts";
import { joinPath, relativeTo } from "../core/path.ts";
import { sha256Hex } from "../core/text.ts";
import { projectPaths, sessionPaths } from "../state/layout.ts";
import {
  type ClaimEvidence,
  type ClaimOwner,
  deactivation,
  decideClaim,
  decideLoopState,
  parseClaimOwner,
  summarizePlan,
} from "./crash_recovery_policy.ts";
import {
  type Codec,
  describeError,
  jsonCodec,
  listStateDir,
  openStateFile,
  readStateText,
  readTextHead,
  removeFile,
  stateFileExists,
  updateState,
  withLock,
  writeNewFile,
} from "../state/store.ts";
import { forgetScavenge, scavengedByDaemon } from "../state/scavenges.ts";
import { markFinished, readSessionStatus } from "./registry.ts";
import type { SessionAssessment } from "./liveness.ts";
import type { SessionSurvey } from "./survey.ts";
import type * as Proc from "../host/proc.ts";
import type * as Liveness from "./liveness.ts";
import type * as Prune from "./prune.ts";
import { importLater } from "../core/lazy.ts";

/** One thing the scan found, and what it did. */
export interface Finding {
  kind: "loop_state" | "claim" | "plan" | "handoff" | "session";
  /** What was done: deactivated, quarantined, deleted, kept, offered, found, pruned, failed. */
  action: string;
  /** The file, relative to the root. */
  target: string;
  /** The outcome in a few words, for the log. */
  result: string;
  /** The line for the agent. */
  line: string;
  /** Housekeeping the agent need not hear about: logged only. */
  quiet?: boolean;
}

/** Settings the scan needs. */
export interface ScanOptions {
  now: number;
  loopStaleSeconds: number;
  claimStaleMinutes: number;
  waitMs: number;
  hostname: string;
  /** The session starting now: its handoff offer is recorded as made to it. */
  sessionId: string;
  staleAfterSeconds: number;
  pruneAfterSeconds: number;
  /** At most this many finished sessions are pruned per scan, so a hook stays quick. */
  maxPrunes: number;
  /** The environment: where lifeline's own state (the daemon's ledger of handoffs) is. */
  env: Readonly<Record<string, string>>;
}

/** A loop state as its loop tool wrote it: the text, and what it says. */
interface LoopFile {
  text: string;
  state: Record<string, unknown>;
}

/** Edits rewrite only the fields lifeline changes: big numbers and every other byte survive. */
const loopCodec = {
  parse(text: string): LoopFile {
    const state = JSON.parse(text);
    if (state === null || typeof state !== "object" || Array.isArray(state)) {
      throw new Error("not a JSON object");
    }
    return { text, state };
  },
  format: (file: LoopFile) => file.text,
} satisfies Codec<LoopFile>;

function ago(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 360) / 10}h`;
  return `${Math.round(seconds / 8640) / 10} days`;
}

/** `fn` over `items`, at most `limit` at a time, results in order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  });
  await Promise.all(workers);
  return results;
}

/** When the file (a link: the link itself) was last modified, or null when it is not there. */
async function mtimeOf(path: string): Promise<number | null> {
  try {
    return (await Deno.lstat(path)).mtime?.getTime() ?? null;
  } catch {
    return null;
  }
}

/** Whether a surveyed loop state needs the lock: it is stale or does not parse. */
function loopNeedsRepair(survey: SessionSurvey, options: ScanOptions): boolean {
  const loop = survey.loop;
  if (loop === undefined) return false;
  if (!loop.parsed) return true; // corrupt as read: look again under the lock
  const state = { active: loop.active, last_checked_at: loop.lastCheckedAt };
  return decideLoopState(state, loop.mtimeMs, options.now, options.loopStaleSeconds).action !==
    "keep";
}

async function scanLoopState(root: string, id: string, options: ScanOptions): Promise<Finding[]> {
  const path = sessionPaths(root, id).ralph;
  const target = `sessions/${id}/ralph.json`;
  // Stale or corrupt: decide again under the lock, from what is there then.
  let finding: Finding | undefined;
  await updateState(path, loopCodec, async (current, previous) => {
    if (previous.kind === "corrupt") {
      const moved = previous.movedTo ? relativeTo(root, previous.movedTo) : "";
      finding = {
        kind: "loop_state",
        action: "quarantined",
        target,
        result: `not valid JSON (${previous.reason}); moved to ${moved}`,
        line: `${target} was not valid JSON; moved it to ${moved} and did not rewrite it. ` +
          "Check it before restarting that loop.",
      };
      return undefined;
    }
    if (!current) return undefined;
    const decision = decideLoopState(
      current.state,
      await mtimeOf(path),
      options.now,
      options.loopStaleSeconds,
    );
    if (decision.action === "keep") return undefined;
    const age = ago(decision.ageSeconds);
    finding = {
      kind: "loop_state",
      action: "deactivated",
      target,
      result: `active, last checked ${age} ago (${decision.basis}); set active=false`,
      line: `${target}: the loop was still marked active but last checked ${age} ago; ` +
        `set active=false (deactivation_reason="stale"), counters and tasks kept.`,
    };
    const fields = deactivation(current.state, options.now);
    const { setJsonFields } = await importLater<typeof JsonText>(
      "../core/json_text.ts",
      import.meta.url,
    ); // repairs only
    return { text: setJsonFields(current.text, fields), state: { ...current.state, ...fields } };
  }, { root, waitMs: options.waitMs, now: options.now });
  return finding ? [finding] : [];
}

/**
 * The claim locks under `.claims/`, in subdirectories too. Links are neither followed nor
 * listed, and a `.claims` that is one is refused: what it points to is not the project's.
 */
async function claimFiles(root: string, dir: string, depth = 0): Promise<string[]> {
  const files: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await listStateDir(dir, { root });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return []; // no claims: nothing to clean
    throw error;
  }
  for (const entry of entries) {
    const path = joinPath(dir, entry.name);
    if (entry.isFile && entry.name.endsWith(".lock")) files.push(path);
    else if (entry.isDirectory && depth < 4) files.push(...await claimFiles(root, path, depth + 1));
  }
  return files;
}

async function ownerState(owner: ClaimOwner) {
  if (owner.pid === undefined) return "not checked" as const;
  const { recordedProcessState } = await importLater<typeof Proc>(
    "../host/proc.ts",
    import.meta.url,
  ); // stale claims only
  return await recordedProcessState({
    pid: owner.pid,
  });
}

/**
 * Whether a process holds a kernel lock on the open claim file. Taking its `flock` tells about
 * `flock` holders everywhere; on Linux `/proc/locks` also shows `lockf` (POSIX) locks, which
 * `flock` does not see. Taken, the lock stays held until the file is closed, so a claim deleted
 * after this check was not taken in between.
 */
async function lockHeld(file: Deno.FsFile): Promise<boolean | "unknown"> {
  let taken: boolean;
  try {
    taken = await file.tryLock(true);
  } catch {
    return "unknown";
  }
  if (!taken) return true;
  const { ino } = await file.stat();
  const { otherLockHolders } = await importLater<typeof Proc>("../host/proc.ts", import.meta.url);
  const holders = ino === null ? null : await otherLockHolders(ino, Deno.pid);
  return holders !== null && holders.length > 0;
}

/** What is known about a stale claim, from the open file. */
async function claimEvidence(file: Deno.FsFile, ageMs: number): Promise<ClaimEvidence> {
  const buffer = new Uint8Array(4096);
  const n = await file.read(buffer);
  const owner = parseClaimOwner(new TextDecoder().decode(buffer.subarray(0, n ?? 0)));
  return { ageMs, owner, ownerState: await ownerState(owner), lockHeld: await lockHeld(file) };
}

const KEPT_BECAUSE: Record<string, (owner: ClaimOwner) => string> = {
  "owner alive": (owner) => `its owner pid ${owner.pid} is still running`,
  "owner unknown": (owner) => `whether its owner pid ${owner.pid} still runs cannot be checked`,
  "owner on another host": (owner) =>
    `its owner is on another host (${owner.host}) and cannot be checked from here`,
  "lock held": () => "a process holds a lock on it",
  "lock unknown": () => "no owner is recorded and whether a process holds it cannot be checked",
};

async function scanClaim(root: string, path: string, options: ScanOptions): Promise<Finding[]> {
  const before = await mtimeOf(path);
  if (before === null) return [];
  const age = options.now - before;
  if (age <= options.claimStaleMinutes * 60_000) return [];
  let file: Deno.FsFile;
  try {
    file = await openStateFile(path, { root });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return []; // released meanwhile
    throw error;
  }
  try {
    return await judgeClaim(root, path, file, { ...options, before, age });
  } finally {
    file.close();
  }
}

async function judgeClaim(
  root: string,
  path: string,
  file: Deno.FsFile,
  options: ScanOptions & { before: number; age: number },
): Promise<Finding[]> {
  const target = relativeTo(root, path);
  const evidence = await claimEvidence(file, options.age);
  const { owner } = evidence;
  const decision = decideClaim(evidence, {
    thisHost: options.hostname,
    staleMinutes: options.claimStaleMinutes,
  });
  const old = ago(Math.floor(options.age / 1000));
  if (decision.action === "keep") {
    return [{
      kind: "claim",
      action: "kept",
      target,
      result: `${old} old, ${decision.reason}`,
      line: `${target} is ${old} old, but ${KEPT_BECAUSE[decision.reason]!(owner)}; kept it.`,
    }];
  }
  // Deleted only if nobody refreshed it since it was judged.
  if (await mtimeOf(path) !== options.before) return [];
  try {
    await removeFile(path, { root });
  } catch (error) {
    return [{
      kind: "claim",
      action: "failed",
      target,
      result: describeError(error),
      line: `${target} is stale (${old}) but could not be deleted: ${describeError(error)}.`,
    }];
  }
  const why = decision.reason === "owner gone" ? `owner pid ${owner.pid} is gone` : "no owner";
  return [{
    kind: "claim",
    action: "deleted",
    target,
    result: `${old} old, ${decision.reason}`,
    line: `${target}: ${old} old, ${why}; deleted the stale lock.`,
  }];
}

/** How much of a plan is read: its heading and checkboxes, far past any real plan's length. */
const PLAN_BYTES = 256 << 10;

/** The plan lifeline last called finished, by the SHA-256 of its text. */
const finishedPlanCodec = jsonCodec((value) => {
  const sha256 = (value as { sha256?: unknown })?.sha256;
  if (typeof sha256 !== "string") throw new Error("not a finished-plan note");
  return { sha256, noted_at: String((value as { noted_at?: unknown }).noted_at ?? "") };
});

/**
 * The plan in `.working-state/current-plan.md`: an interrupted one is to be read first, at every
 * start; a finished one (every checkbox ticked) is mentioned once, as finished, and again only
 * when its text changes.
 */
async function scanPlan(root: string, options: ScanOptions): Promise<Finding[]> {
  const paths = projectPaths(root);
  let head: { text: string; complete: boolean };
  try {
    head = await readTextHead(paths.currentPlan, { root, maxBytes: PLAN_BYTES });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  const plan = summarizePlan(head.text);
  const titled = plan.heading ? ` ("${plan.heading}")` : "";
  const target = ".working-state/current-plan.md";
  if (!head.complete || plan.boxes === 0 || plan.ticked < plan.boxes) {
    return [{
      kind: "plan",
      action: "found",
      target,
      result: plan.heading ? `heading: ${plan.heading}` : "no heading",
      line: `Read ${target} before anything else: the last session left an ` +
        `interrupted plan${titled}. Resume it from where it stopped.`,
    }];
  }
  const hash = await sha256Hex(head.text);
  const noted = await updateState(
    paths.finishedPlan,
    finishedPlanCodec,
    (current) =>
      current?.sha256 === hash
        ? undefined
        : { sha256: hash, noted_at: new Date(options.now).toISOString() },
    { root, waitMs: options.waitMs, now: options.now },
  );
  if (!noted.written) return [];
  return [{
    kind: "plan",
    action: "finished",
    target,
    result: `finished: ${plan.ticked}/${plan.boxes} checkboxes ticked`,
    line: `The plan in ${target}${titled} is finished: all ${plan.boxes} of its checkboxes are ` +
      "ticked, so there is nothing to resume. (Said once; a new plan in that file is read again.)",
  }];
}

/** Offers a scavenged session's handoff, once, while nobody has read it. */
async function scanHandoff(
  root: string,
  judged: SessionAssessment,
  options: ScanOptions,
): Promise<Finding[]> {
  if (judged.state !== "scavenged" || judged.finished) return [];
  const id = judged.id;
  const paths = sessionPaths(root, id);
  if (await mtimeOf(paths.scavenged) === null) return [];
  // Under the registry's lock, the one a heartbeat takes to bring a session back: a session that
  // came back meanwhile is not offered, and is never marked finished.
  const target = `sessions/${id}/handoffs/scavenged.md`;
  const offered = await withLock(paths.session, async () => {
    if (readSessionStatus(root, id) !== "scavenged") return false;
    // Only what lifeline's daemon wrote, for a session lifeline registered: a handoff that came
    // with the repository would be read to the new session, in lifeline's voice, as its work.
    const handoff = await readStateText(paths.scavenged, { root, maxBytes: 1 << 20 });
    if (
      !stateFileExists(paths.session, { root }) ||
      !await scavengedByDaemon(options.env, { root, session: id, handoff })
    ) {
      return "not ours";
    }
    // Creating the marker is the claim: two sessions starting at once offer it once between them.
    try {
      await writeNewFile(
        `${paths.scavenged}.offered`,
        JSON.stringify({ offered_at: new Date(options.now).toISOString(), to: options.sessionId }) +
          "\n",
        { root },
      );
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return false;
      throw error;
    }
    await markFinished(root, id, "scavenged");
    await forgetScavenge(options.env, root, id);
    return true;
  }, { root, waitMs: options.waitMs });
  if (offered === "not ours") {
    return [{
      kind: "handoff",
      action: "kept",
      target,
      result: "not offered: lifeline's daemon did not write it (it came with the project?)",
      line: "",
      quiet: true,
    }];
  }
  if (!offered) return [];
  return [{
    kind: "handoff",
    action: "offered",
    target,
    result: `offered to ${options.sessionId}`,
    line: `Session ${id} died without saving its work; lifeline rescued its findings from the ` +
      `transcript. Read ${target} (last prompts, open todos, edited files, errors) and pick up ` +
      "what it left unfinished.",
  }];
}

/**
 * The handoff and pruning steps of one session that has a lifecycle (ended or scavenged), judged
 * by the same judgement as the daemon's and `status`'s.
 */
async function scanLifecycle(
  root: string,
  survey: SessionSurvey,
  options: ScanOptions,
  prunes: { left: number },
): Promise<Finding[]> {
  // Loaded here: most scans meet no session with a lifecycle, and these modules are a third of the
  // hook's.
  const [{ assessSession }, { pruneSession }] = await Promise.all([
    importLater<typeof Liveness>("./liveness.ts", import.meta.url),
    importLater<typeof Prune>("./prune.ts", import.meta.url),
  ]);
  const judged = await assessSession(root, survey.id, {
    now: options.now,
    staleAfterSeconds: options.staleAfterSeconds,
    pruneAfterSeconds: options.pruneAfterSeconds,
    panes: new Map(),
  });
  const findings = survey.names.has("handoffs") ? await scanHandoff(root, judged, options) : [];
  const prune = judged.actions.find((action) => action.kind === "prune");
  if (prune && prunes.left > 0) {
    prunes.left--;
    if (await pruneSession(root, survey.id, options)) {
      findings.push({
        kind: "session",
        action: "pruned",
        target: `sessions/${survey.id}`,
        result: prune.reason,
        line: "",
        quiet: true,
      });
    }
  }
  return findings;
}

/** `step`, with a failure turned into a finding: one bad entry never stops the scan. */
async function isolated(
  kind: Finding["kind"],
  target: string,
  step: () => Promise<Finding[]>,
): Promise<Finding[]> {
  try {
    return await step();
  } catch (error) {
    return [{
      kind,
      action: "failed",
      target,
      result: describeError(error),
      line: `${target} could not be checked (${describeError(error)}); skipped it.`,
    }];
  }
}

/** Scans the root for leftovers, repairing what is stale. Findings come plan first. */
export async function scanLeftovers(
  root: string,
  sessions: readonly SessionSurvey[],
  options: ScanOptions,
): Promise<Finding[]> {
  const [plan, claims] = await Promise.all([
    scanPlan(root, options),
    claimFiles(root, projectPaths(root).claims),
  ]);
  const stale = sessions.filter((survey) => loopNeedsRepair(survey, options));
  // Only a session whose status says it ended or was scavenged has a handoff to offer or may be
  // pruned, and a finished one only once it is old enough; the others cost nothing more here.
  const pruneFrom = options.now - options.pruneAfterSeconds * 1000;
  // Never the session starting now: it is alive, whatever its files said before it started.
  const finishing = sessions.filter((s) =>
    s.id !== options.sessionId &&
    (s.finishedMs === undefined
      ? s.status === "scavenged" || s.status === "ended"
      : s.finishedMs < pruneFrom)
  );
  const prunes = { left: options.maxPrunes };
  const perSession = [
    ...await mapLimit(stale, 16, (survey) =>
      isolated(
        "loop_state",
        `sessions/${survey.id}/ralph.json`,
        () => scanLoopState(root, survey.id, options),
      )),
    ...await mapLimit(finishing, 16, (survey) =>
      isolated(
        "handoff",
        `sessions/${survey.id}`,
        () => scanLifecycle(root, survey, options, prunes),
      )),
  ];
  const claimFindings = await mapLimit(claims, 16, (path) => scanClaim(root, path, options));
  const all = [...perSession.flat(), ...claimFindings.flat()];
  return [
    ...plan,
    ...all.filter((f) => f.kind === "handoff"),
    ...all.filter((f) => f.kind === "loop_state"),
    ...all.filter((f) => f.kind === "claim"),
    ...all.filter((f) => f.kind === "session"),
  ];
}

/** The most recently active other session (by heartbeat), if it was seen within `withinMs`. */
export function latestOtherSession(
  sessions: readonly SessionSurvey[],
  { sessionId, now, withinMs }: { sessionId: string; now: number; withinMs: number },
): string | undefined {
  let best: SessionSurvey | undefined;
  for (const s of sessions) {
    if (s.id === sessionId || s.heartbeatMs === null || !s.names.has("session.json")) continue;
    if (now - s.heartbeatMs > withinMs) continue;
    if (!best || s.heartbeatMs > best.heartbeatMs!) best = s;
  }
  return best?.id;
}
