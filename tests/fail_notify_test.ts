// `fail handle` tells the user when a handling needs a person: it opened a task's breaker, or
// spent the loop's iteration budget. Once per episode: the answers after it do not tell again.
// Through notify.command (a real program), and inside tmux, on the client showing the loop's pane.
import assert from "node:assert/strict";
import { makeRepo } from "./helpers/git_repo.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** A repository with the harness, its config sending notices to `<dir>/notified.txt`. */
async function loop(dir: string, config: Record<string, unknown> = {}) {
  const root = await makeRepo(`${dir}/repo`);
  const sink = `${dir}/notified.txt`;
  // notify.command is the user's alone: it lives in the user's config.
  await Deno.mkdir(`${dir}/home/.config/lifeline`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/home/.config/lifeline/config.json`,
    JSON.stringify({
      notify: {
        tmux: false,
        command: [
          "sh",
          "-c",
          `printf '%s|%s|%s\\n' "$LIFELINE_EVENT" "$LIFELINE_PANE" "$1" >> ${sink}`,
          "n",
        ],
      },
      ...config,
    }),
  );
  const env = { HOME: `${dir}/home`, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" };
  const run = (args: string[], extra: Record<string, string> = {}) =>
    runInProcess(args, { cwd: root, env: { ...env, ...extra } });
  assert.equal((await run(["fail", "init"])).code, 0);
  const fail = (task: string, extra: Record<string, string> = {}) =>
    run([
      "fail",
      "handle",
      "--task",
      task,
      "--skill",
      "build",
      "--error",
      "SyntaxError: x",
      "--no-rollback",
    ], extra);
  const notified = async () =>
    (await Deno.readTextFile(sink).catch(() => "")).split("\n").filter(Boolean);
  return { root, fail, notified };
}

Deno.test({
  name: "fail handle notifies once when it opens a task's breaker",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { root, fail, notified } = await loop(dir);
      assert.equal((await fail("T1")).code, 0);
      assert.equal((await fail("T1")).code, 0);
      assert.deepEqual(await notified(), [], "a retry needs no one");
      assert.equal((await fail("T1")).code, 10);
      assert.deepEqual(await notified(), [
        `breaker_open||fail handle in ${root}: T1 (build) failed 3 times: its circuit breaker is open ` +
        `and the loop stops this task; fix the cause, then ` +
        `\`lifeline fail handle --success --task T1 --skill build --root ${root}\``,
      ]);
      assert.equal((await fail("T1")).code, 10, "the breaker answers");
      assert.equal((await notified()).length, 1, "and does not tell again");
    });
  },
});

Deno.test({
  name: "fail handle notifies once when it spends the iteration budget",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { root, fail, notified } = await loop(dir, { breaker: { maxIterations: 20 } });
      assert.equal((await fail("T1")).code, 0);
      assert.equal((await fail("T2")).code, 10);
      assert.deepEqual(await notified(), [
        `budget_spent||fail handle in ${root}: T2 (build): the loop's iteration budget is spent (20/20); ` +
        `every task stops until \`lifeline fail reset --global --root ${root}\``,
      ]);
      assert.equal((await fail("T3")).code, 10);
      assert.equal((await notified()).length, 1);
    });
  },
});

Deno.test({
  name: "inside tmux, fail handle shows the notice on the client that shows its pane",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const { fail } = await loop(dir, { notify: { tmux: true, command: null } });
      const server = `lifeline-test-${crypto.randomUUID().slice(0, 8)}`;
      const tmux = async (...args: string[]) => {
        const command = new Deno.Command("tmux", { args: ["-L", server, ...args], stderr: "null" });
        return new TextDecoder().decode((await command.output()).stdout).trim();
      };
      await tmux("new-session", "-d", "-s", "loop", "sleep 300");
      // A client, as a user's terminal would be: a control-mode one needs no terminal.
      const client = new Deno.Command("tmux", {
        args: ["-L", server, "-C", "attach", "-t", "loop"],
        stdin: "piped",
        stdout: "null",
        stderr: "null",
      }).spawn();
      try {
        const socket = await tmux("display-message", "-p", "#{socket_path}");
        const pane = await tmux("display-message", "-p", "-t", "loop", "#{pane_id}");
        const inside = { TMUX: `${socket},1,0`, TMUX_PANE: pane };
        for (let i = 0; i < 50 && !(await tmux("list-clients")).includes("loop"); i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        for (let i = 0; i < 3; i++) await fail("T1", inside);
        assert.match(
          await tmux("show-messages"),
          /message: lifeline: fail handle in .*: T1 \(build\) failed 3 times: its circuit breaker is open/,
        );
      } finally {
        await tmux("kill-server");
        await client.stdin.close().catch(() => {});
        await client.status;
      }
    });
  },
});
