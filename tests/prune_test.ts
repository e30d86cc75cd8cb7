// Pruning finished sessions: ended, or scavenged with the handoff delivered, and idle for longer
// than stale.pruneAfterDays. Never a live one, never an undelivered handoff.
import assert from "node:assert/strict";
import { hookInput } from "./helpers/fixtures.ts";
import { parseHookStdout, runLifeline } from "./helpers/lifeline.ts";
import { registerSession } from "./helpers/sessions.ts";
import { recordScavenge } from "../lib/state/scavenges.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

const DAY = 86_400_000;

interface Shape {
  status?: "ended" | "scavenged" | "alive";
  /** The handoff was offered to a later session. */
  delivered?: boolean;
  /** How long ago the status was written, and the heartbeat last beat, in days. */
  idleDays: number;
  /** A heartbeat fresher than the status (its hook wrote it, but could not mark it alive). */
  beatingNow?: boolean;
  /** Carries the `finished` mark this version writes (records of earlier versions do not). */
  marked?: boolean;
}

/** A session left in the shape the daemon and the hooks leave one, with its files' times set. */
async function session(dir: string, id: string, shape: Shape): Promise<void> {
  const then = new Date(Date.now() - shape.idleDays * DAY);
  const beat = shape.beatingNow ? new Date() : then;
  const sessionDir = await registerSession(`${dir}/project`, id, {
    heartbeatAgo: Math.floor((Date.now() - beat.getTime()) / 1000),
  });
  await Deno.utime(`${sessionDir}/heartbeat`, beat, beat);
  await Deno.mkdir(`${sessionDir}/handoffs`);
  if (shape.status === "scavenged") {
    await Deno.writeTextFile(`${sessionDir}/handoffs/scavenged.md`, "# Handoff\n");
    // As the daemon records what it wrote (hook crash offers nothing else).
    await recordScavenge({ HOME: `${dir}/home` }, {
      root: `${dir}/project`,
      session: id,
      handoff: "# Handoff\n",
      now: Date.now(),
    });
    if (shape.delivered) {
      await Deno.writeTextFile(`${sessionDir}/handoffs/scavenged.md.offered`, "{}\n");
    }
  }
  if (shape.status) {
    await Deno.writeTextFile(`${sessionDir}/status`, `${shape.status}\n`);
    await Deno.utime(`${sessionDir}/status`, then, then);
  }
  if (shape.marked) {
    await Deno.writeTextFile(`${sessionDir}/finished`, `${shape.status}\n`);
    await Deno.utime(`${sessionDir}/finished`, then, then);
  }
}

const SHAPES: Record<string, Shape & { pruned: boolean }> = {
  "ended-8d": { status: "ended", idleDays: 8, pruned: true },
  "delivered-8d": { status: "scavenged", delivered: true, idleDays: 8, pruned: true },
  "unread-8d": { status: "scavenged", delivered: false, idleDays: 8, pruned: false },
  "ended-2d": { status: "ended", idleDays: 2, pruned: false },
  "ended-but-beating": { status: "ended", idleDays: 8, beatingNow: true, pruned: false },
  "alive-8d": { status: "alive", idleDays: 8, pruned: false },
  "quiet-8d": { idleDays: 8, pruned: false },
  "marked-ended-8d": { status: "ended", marked: true, idleDays: 8, pruned: true },
  "marked-delivered-8d": {
    status: "scavenged",
    delivered: true,
    marked: true,
    idleDays: 8,
    pruned: true,
  },
  "marked-ended-2d": { status: "ended", marked: true, idleDays: 2, pruned: false },
  "marked-but-beating": {
    status: "ended",
    marked: true,
    idleDays: 8,
    beatingNow: true,
    pruned: false,
  },
};

async function remaining(dir: string): Promise<string[]> {
  return await listDir(`${dir}/project/sessions`);
}

Deno.test("the daemon prunes finished sessions idle for over 7 days, and nothing else", async () => {
  await withTempDir(async (dir) => {
    for (const [id, shape] of Object.entries(SHAPES)) await session(dir, id, shape);
    const result = await runLifeline(
      ["daemon", "stale", "--once", "--json", "--root", `${dir}/project`],
      { env: { HOME: `${dir}/home` } },
    );
    assert.equal(result.code, 0, result.stderr);
    const expected = Object.entries(SHAPES).filter(([, s]) => !s.pruned).map(([id]) => id).sort();
    assert.deepEqual(await remaining(dir), expected);
    const lines = result.stdout.trim().split("\n").map((line) => JSON.parse(line))
      .filter((line) => !line.event);
    assert.deepEqual(
      lines.filter((l) => l.action === "prune").map((l) => l.session).sort(),
      ["delivered-8d", "ended-8d", "marked-delivered-8d", "marked-ended-8d"],
    );
    const log = await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`);
    assert.equal(log.split("\n").filter((l) => l.includes('"action":"pruned"')).length, 4);
  });
});

Deno.test("stale.pruneAfterDays sets the age", async () => {
  await withTempDir(async (dir) => {
    await session(dir, "ended-2d", { status: "ended", idleDays: 2 });
    await session(dir, "ended-half-day", { status: "ended", idleDays: 0.5 });
    await Deno.mkdir(`${dir}/project/.lifeline`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/project/.lifeline/config.json`,
      JSON.stringify({ stale: { pruneAfterDays: 1 } }),
    );
    const result = await runLifeline(["daemon", "stale", "--once", "--root", `${dir}/project`], {
      env: { HOME: `${dir}/home` },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await remaining(dir), ["ended-half-day"]);
  });
});

Deno.test("hook crash prunes finished sessions too, and does not tell the agent", async () => {
  await withTempDir(async (dir) => {
    for (const [id, shape] of Object.entries(SHAPES)) await session(dir, id, shape);
    const result = await runLifeline(["hook", "crash"], {
      stdin: JSON.stringify({
        ...await hookInput("hh-text", "SessionStart"),
        session_id: "next",
        cwd: `${dir}/project`,
      }),
      env: { HOME: `${dir}/home` },
    });
    assert.equal(result.code, 0);
    const context = parseHookStdout(result.stdout, "SessionStart")?.hookSpecificOutput
      .additionalContext ?? "";
    assert.doesNotMatch(context, /prun/i);
    // The unread handoff is offered (and so delivered: the next prune may take it).
    assert.match(context, /Read sessions\/unread-8d\/handoffs\/scavenged\.md/);
    const kept = Object.entries(SHAPES).filter(([, s]) => !s.pruned).map(([id]) => id);
    assert.deepEqual(await remaining(dir), [...kept, "next"].sort());
    const log = await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`);
    assert.equal(log.split("\n").filter((l) => l.includes('"action":"pruned"')).length, 4);
  });
});
