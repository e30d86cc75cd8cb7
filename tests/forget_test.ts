// `lifeline forget <session>`: removes a session's state from the project, refuses a live one.
import assert from "node:assert/strict";
import { runLifeline } from "./helpers/lifeline.ts";
import { registerSession } from "./helpers/sessions.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

/** A registered session whose heartbeat is `ago` seconds old and whose agent pid is dead. */
async function session(project: string, id: string, ago: number): Promise<void> {
  const dir = await registerSession(project, id, { heartbeatAgo: ago });
  await Deno.mkdir(`${dir}/handoffs`);
  await Deno.writeTextFile(`${dir}/fail-count-Bash.txt`, "2\n");
}

async function forget(dir: string, ...args: string[]) {
  return await runLifeline(["forget", ...args], {
    env: { HOME: `${dir}/home` },
    cwd: `${dir}/project`,
  });
}

Deno.test("forget removes an ended session's state, and status lists it no more", async () => {
  await withTempDir(async (dir) => {
    const project = `${dir}/project`;
    await session(project, "old", 3600);
    await session(project, "other", 3600);
    const result = await forget(dir, "old");
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "Forgot session old: removed sessions/old.\n");
    assert.deepEqual(await listDir(`${project}/sessions`), ["other"]);
    const status = await runLifeline(["status", "--json"], {
      env: { HOME: `${dir}/home` },
      cwd: project,
    });
    assert.deepEqual(JSON.parse(status.stdout).sessions.map((s: { id: string }) => s.id), [
      "other",
    ]);
  });
});

Deno.test("forget refuses a live session unless --force; --json says what it removed", async () => {
  await withTempDir(async (dir) => {
    const project = `${dir}/project`;
    await session(project, "live", 5);
    const refused = await forget(dir, "live");
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^error: session live is alive \(heartbeat \d+s ago\); left it/);
    assert.deepEqual(await listDir(`${project}/sessions`), ["live"]);
    const forced = await forget(dir, "live", "--force", "--json");
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual(JSON.parse(forced.stdout), {
      session: "live",
      removed: "sessions/live",
      state: "alive",
    });
    assert.deepEqual(await listDir(`${project}/sessions`), []);
  });
});

Deno.test("forget: an unknown session, a bad id, a linked session directory", async (t) => {
  await withTempDir(async (dir) => {
    const project = `${dir}/project`;
    await Deno.mkdir(`${project}/sessions`, { recursive: true });
    await t.step("unknown: exit 1", async () => {
      const result = await forget(dir, "nope");
      assert.equal(result.code, 1);
      assert.match(result.stderr, /^error: no session "nope" in /);
    });
    await t.step("not a session id: usage error", async () => {
      const result = await forget(dir, "../x");
      assert.equal(result.code, 64);
      assert.match(result.stderr, /Invalid session id/);
    });
    await t.step("a linked session directory is refused, and what it points to kept", async () => {
      await Deno.mkdir(`${dir}/elsewhere`);
      await Deno.writeTextFile(`${dir}/elsewhere/keep.txt`, "keep\n");
      await Deno.symlink(`${dir}/elsewhere`, `${project}/sessions/linked`);
      const result = await forget(dir, "linked", "--force");
      assert.equal(result.code, 1);
      assert.match(result.stderr, /Refusing .*sessions\/linked": it is a symbolic link/);
      assert.deepEqual(await listDir(`${dir}/elsewhere`), ["keep.txt"]);
    });
  });
});
