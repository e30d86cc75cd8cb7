// `lifeline logs`: the watcher's and the daemon's logs, merged, newest last, readable; --json,
// --since, one log only; bounded reads of a huge log; --follow across a rotation, until stopped.
import assert from "node:assert/strict";
import { memoryOutput } from "../lib/core/output.ts";
import { appendEvent } from "../lib/state/event_log.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { spawnLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

const NOW = Date.parse("2026-12-01T12:00:00.000Z");
const at = (minutesAgo: number) => new Date(NOW - minutesAgo * 60_000).toISOString();

/** Records as the watcher and the daemon write them. */
const WATCH_START = {
  ts: at(200),
  event: "start",
  message: "watching tmux server /tmp/tmux-1000/default (pid 7) every 60 s; log …",
};
const WATCH_PANE = {
  ts: at(30),
  pane: "%3",
  session: "work",
  state: "usage_limit",
  signal: "both",
  reset_at: at(-10),
  action: "wait",
  reason: "limited until 12:10",
};
const DAEMON_SCAVENGE = {
  ts: at(20),
  root: "/home/me/project",
  session: "s1",
  state: "dead",
  heartbeat_age: 900,
  action: "scavenge",
  reason:
    "no heartbeat for 900s and its tmux pane is gone; wrote sessions/s1/handoffs/scavenged.md",
};
const DAEMON_DROPPED = {
  ts: at(5),
  event: "root_dropped",
  message: "/home/me/old no longer exists; dropped it from the registry",
};

async function logs(dir: string) {
  const root = `${dir}/state`;
  await Deno.mkdir(`${root}/logs`, { recursive: true });
  // The watcher's start is in its previous (rotated) file.
  await appendEvent(`${root}/logs/watch.log.1`, WATCH_START, { root });
  await appendEvent(`${root}/logs/watch.log`, WATCH_PANE, { root });
  await Deno.writeTextFile(`${root}/logs/watch.log`, '{"ts": "torn', { append: true });
  await appendEvent(`${root}/logs/daemon.log`, DAEMON_SCAVENGE, { root });
  await appendEvent(`${root}/logs/daemon.log`, DAEMON_DROPPED, { root });
  return { env: { HOME: `${dir}/home`, LIFELINE_STATE_DIR: root }, root };
}

const run = (args: string[], env: Record<string, string>, dir: string) =>
  runInProcess(["logs", ...args], { cwd: dir, env, now: () => NOW });

Deno.test("logs: both logs merged by time, newest last, one readable line per entry", async (t) => {
  await withTempDir(async (dir) => {
    const { env } = await logs(dir);
    await t.step("text", async () => {
      const result = await run([], env, dir);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(result.stdout.trim().split("\n"), [
        `${at(200)} watch ${WATCH_START.message}`,
        `${at(30)} watch %3 (work) usage_limit: wait - limited until 12:10`,
        `${at(20)} daemon /home/me/project: session s1 scavenge - ${DAEMON_SCAVENGE.reason}`,
        `${at(5)} daemon ${DAEMON_DROPPED.message}`,
      ]);
    });
    await t.step("--json: the records, with the log each came from", async () => {
      const result = await run(["--json"], env, dir);
      const records = result.stdout.trim().split("\n").map((l) => JSON.parse(l));
      assert.deepEqual(records, [
        { log: "watch", ...WATCH_START },
        { log: "watch", ...WATCH_PANE },
        { log: "daemon", ...DAEMON_SCAVENGE },
        { log: "daemon", ...DAEMON_DROPPED },
      ]);
    });
    await t.step("--since 1h, and one log only", async () => {
      const recent = await run(["--since", "1h"], env, dir);
      assert.equal(recent.stdout.trim().split("\n").length, 3);
      const daemon = await run(["daemon", "--since", "25m"], env, dir);
      assert.deepEqual(daemon.stdout.trim().split("\n").map((l) => l.split(" ")[1]), [
        "daemon",
        "daemon",
      ]);
      assert.equal(
        (await run(["--lines", "1"], env, dir)).stdout.trim(),
        `${at(5)} daemon ${DAEMON_DROPPED.message}`,
      );
    });
    await t.step("bad arguments are usage errors", async () => {
      const which = await run(["kernel"], env, dir);
      assert.equal(which.code, 64);
      assert.match(which.stderr, /error: the log is "watch" or "daemon", got "kernel"/);
      const since = await run(["--since", "5 minutes"], env, dir);
      assert.equal(since.code, 64);
      assert.match(since.stderr, /--since must be a number and d, h or m \(like 1h\)/);
    });
  });
});

Deno.test("logs: a huge log is read from its end only", async () => {
  await withTempDir(async (dir) => {
    const root = `${dir}/state`;
    await Deno.mkdir(`${root}/logs`, { recursive: true });
    // 16 MiB of entries, one a second, the newest a minute ago (more than any rotation leaves).
    const line = (i: number, count: number) =>
      JSON.stringify({
        ...DAEMON_SCAVENGE,
        ts: new Date(NOW - 60_000 - (count - i) * 1000).toISOString(),
        session: `s${i}`,
      }) + "\n";
    const count = Math.ceil((16 << 20) / line(0, 1).length);
    const file = await Deno.open(`${root}/logs/daemon.log`, { create: true, write: true });
    const encoder = new TextEncoder();
    for (let i = 0; i < count; i += 1000) {
      let chunk = "";
      for (let j = i; j < Math.min(count, i + 1000); j++) chunk += line(j, count);
      await file.write(encoder.encode(chunk));
    }
    file.close();
    const env = { HOME: `${dir}/home`, LIFELINE_STATE_DIR: root };
    const last = await run(["--lines", "2", "--json"], env, dir);
    assert.deepEqual(last.stdout.trim().split("\n").map((l) => JSON.parse(l).session), [
      `s${count - 2}`,
      `s${count - 1}`,
    ]);
    const all = await run(["--since", "30d"], env, dir);
    const shown = all.stdout.trim().split("\n").length;
    assert.ok(shown > 1000 && shown < count / 3, `${shown} of ${count} entries shown`);
    assert.match(
      all.stderr,
      /only the last 4 MiB of .*daemon\.log was read; older entries are not shown/,
    );
  });
});

Deno.test("logs --follow: prints what is written, across a rotation, until stopped", async () => {
  await withTempDir(async (dir) => {
    const { env, root } = await logs(dir);
    const out = memoryOutput();
    const stop = new AbortController();
    const following = runInProcess(["logs", "--follow", "daemon"], {
      cwd: dir,
      env,
      now: () => NOW,
      signal: stop.signal,
      out,
    });
    const printed = async (text: string) => {
      for (let i = 0; i < 200 && !out.stdout.includes(text); i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      assert.ok(out.stdout.includes(text), `never printed ${text}:\n${out.stdout}`);
    };
    await printed(DAEMON_DROPPED.message);
    const path = `${root}/logs/daemon.log`;
    await appendEvent(path, { ...DAEMON_SCAVENGE, ts: at(1), session: "after-1" }, { root });
    await printed("session after-1");
    // This one rotates the log first (it is over the limit given): the new file is followed.
    await appendEvent(path, { ...DAEMON_SCAVENGE, ts: at(0), session: "after-2" }, {
      root,
      maxBytes: 10,
    });
    await Deno.stat(`${path}.1`);
    await printed("session after-2");
    stop.abort();
    const result = await following;
    assert.equal(result.code, 0, result.stderr);
    const sessions = out.stdout.trim().split("\n").map((l) => /session (\S+)/.exec(l)?.[1] ?? "-");
    assert.deepEqual(sessions, ["s1", "-", "after-1", "after-2"], "each entry once, in order");
  });
});

Deno.test({
  name: "logs --follow: Ctrl-C (SIGINT) ends it with exit 0",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const { env } = await logs(dir);
      const child = spawnLifeline(["logs", "--follow"], { env, cwd: dir });
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let seen = "";
      while (!seen.includes("dropped it from the registry")) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += value;
      }
      child.kill("SIGINT");
      assert.equal((await child.status).code, 0);
      reader.releaseLock();
      await child.stdout.cancel().catch(() => {});
      await child.stderr.cancel();
    });
  },
});
