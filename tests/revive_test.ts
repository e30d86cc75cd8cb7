// `daemon stale --revive`: a scavenged session whose agent ran in tmux is resumed in a new window
// of its tmux session, in its cwd, with `claude --resume <id>`: once, and never when it was ended
// on purpose or replaced. A real private tmux server; `claude` is a fake on the server's PATH
// that writes down where it ran and with what.
import assert from "node:assert/strict";
import { transcriptPath } from "./helpers/fixtures.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { runLifeline } from "./helpers/lifeline.ts";
import { agentScreen } from "./helpers/screens.ts";
import { registerSession } from "./helpers/sessions.ts";
import { withTempDir } from "./helpers/temp.ts";
import { type TmuxHarness, withTmux } from "./helpers/tmux_harness.ts";
import { withLock } from "../lib/state/store.ts";
import { decideRevive, type ScavengedSession } from "../lib/sessions/revive_policy.ts";

const IGNORE = Deno.build.os === "windows";

Deno.test("decideRevive: once, in tmux, not after a quit it did not work past, not when replaced", async (t) => {
  const died: ScavengedSession = {
    inTmux: true,
    heartbeat: 1_000,
    end: null,
    endsRecorded: true,
    newerLive: null,
  };
  const rows: [string, Partial<ScavengedSession>, boolean, RegExp | null][] = [
    ["a death in tmux: revived", {}, false, null],
    ["revived before", {}, true, /revived once already/],
    ["not in tmux", { inTmux: false }, false, /did not run in tmux/],
    [
      "quit with /exit",
      { end: { reason: "prompt_input_exit", at: 1_000_500 } },
      false,
      /on purpose/,
    ],
    ["/clear", { end: { reason: "clear", at: 1_000_000 } }, false, /SessionEnd: clear/],
    ["quit, then resumed and worked on", { end: { reason: "logout", at: 900_000 } }, false, null],
    ["ended for another reason", { end: { reason: "other", at: 1_000_000 } }, false, null],
    ["quits not recorded", { endsRecorded: false }, false, /no SessionEnd hook/],
    ["replaced", { newerLive: "s2" }, false, /newer session of the project is alive \(s2\)/],
  ];
  for (const [name, change, revived, skip] of rows) {
    await t.step(name, () => {
      const { state, actions } = decideRevive({ revived }, { ...died, ...change }, {
        enabled: true,
      });
      if (skip) {
        assert.equal(actions[0]?.kind, "skip");
        assert.match((actions[0] as { reason: string }).reason, skip);
        assert.deepEqual(state, { revived });
      } else {
        assert.deepEqual(actions, [{ kind: "open_window" }]);
        assert.deepEqual(state, { revived: true });
      }
    });
  }
  await t.step("off: no action at all", () => {
    assert.deepEqual(decideRevive({ revived: false }, died, { enabled: false }).actions, []);
  });
});

/** A project whose settings run `hook heartbeat` on SessionEnd, as revive needs. */
async function project(dir: string, config: unknown = {}): Promise<string> {
  const root = `${dir}/project`;
  await Deno.mkdir(`${root}/.claude`, { recursive: true });
  await Deno.mkdir(`${root}/.lifeline`, { recursive: true });
  await Deno.mkdir(`${root}/src`, { recursive: true });
  await Deno.writeTextFile(`${root}/.lifeline/config.json`, JSON.stringify(config));
  await Deno.writeTextFile(
    `${root}/.claude/settings.json`,
    JSON.stringify({
      hooks: {
        SessionEnd: [{ hooks: [{ type: "command", command: "lifeline hook heartbeat" }] }],
      },
    }),
  );
  return root;
}

/**
 * Puts a fake `claude` first on the (running) tmux server's PATH; what it was run with lands in
 * `ran/`.
 */
async function fakeClaude(dir: string, tmux: TmuxHarness): Promise<void> {
  await Deno.mkdir(`${dir}/bin`);
  await Deno.mkdir(`${dir}/ran`);
  await Deno.writeTextFile(
    `${dir}/bin/claude`,
    `#!/bin/sh\nprintf '%s\\n' "$PWD" "$@" > '${dir}/ran/'"$2"'.tmp' && mv '${dir}/ran/'"$2"'.tmp' '${dir}/ran/'"$2"\nexec sleep 60\n`,
    { mode: 0o755 },
  );
  await tmux.run(["set-environment", "-g", "PATH", `${dir}/bin:${Deno.env.get("PATH")}`]);
}

/** A session whose agent ran in a pane of `tmux`, went quiet 15 minutes ago and is gone. */
async function deadSession(
  root: string,
  tmux: TmuxHarness,
  id: string,
): Promise<{ session: string }> {
  // The agent is gone: its pane shows the shell it ran in.
  const pane = await tmux.addAgent(agentScreen({ conversation: [`❯ the work of ${id}`] }), {
    command: "bash",
  });
  const [session, serverPid] = (await tmux.run([
    ...["display-message", "-p", "-t", pane.id, "#{session_id} #{pid}"],
  ])).trim().split(" ");
  await registerSession(root, id, {
    heartbeatAgo: 900,
    firstSeenAgo: 3600,
    transcript: transcriptPath("hh-tool-fail"),
    record: {
      cwd: `${root}/src`,
      tmux_pane: pane.id,
      tmux_socket: await tmux.socketPath(),
      tmux_session: session,
      tmux_server_pid: Number(serverPid),
      agent_command: "claude",
    },
  });
  return { session: session! };
}

/** A session that works now, started `firstSeenAgo` seconds ago. */
const liveSession = (root: string, id: string, firstSeenAgo: number) =>
  registerSession(root, id, { heartbeatAgo: 5, agentPid: Deno.pid, firstSeenAgo });

interface Line {
  event?: string;
  session: string;
  state: string;
  action: string;
  reason: string;
  window?: string;
}

async function tick(dir: string, root: string, ...extra: string[]): Promise<Line[]> {
  const result = await runInProcess([
    "daemon",
    "stale",
    "--once",
    "--json",
    "--root",
    root,
    ...extra,
  ], {
    cwd: dir,
    env: { HOME: `${dir}/home`, LIFELINE_STATE_DIR: `${dir}/state` },
  });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim().split("\n").map((l) => JSON.parse(l)).filter((l) => !l.event);
}

async function ran(dir: string, id: string, timeoutMs = 10_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return (await Deno.readTextFile(`${dir}/ran/${id}`)).trim().split("\n");
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const windows = async (tmux: TmuxHarness, session: string) =>
  (await tmux.run(["list-windows", "-t", session, "-F", "#{window_id}"])).trim().split("\n");

Deno.test({
  name: "a dead tmux session is resumed once: a new window of its tmux session, in its cwd",
  ignore: IGNORE,
  async fn() {
    await withTempDir((dir) =>
      withTmux(dir, async (tmux) => {
        const root = await project(dir);
        const { session } = await deadSession(root, tmux, "gone-1");
        await fakeClaude(dir, tmux);
        // A session that started before it died runs beside it: a parallel agent, not a successor.
        await liveSession(root, "sibling", 7200);
        const first = await tick(dir, root, "--revive");
        const by = (lines: Line[], action: string) => lines.find((l) => l.action === action);
        assert.equal(by(first, "scavenge")?.session, "gone-1");
        const revived = by(first, "revive")!;
        assert.equal(revived.session, "gone-1");
        assert.match(revived.reason, /^opened tmux window @\d+ running `claude --resume gone-1`$/);
        assert.deepEqual(await ran(dir, "gone-1"), [`${root}/src`, "--resume", "gone-1"]);
        assert.ok((await windows(tmux, session)).includes(revived.window!), "in its tmux session");
        const marker = JSON.parse(await Deno.readTextFile(`${root}/sessions/gone-1/revived.json`));
        assert.equal(marker.window, revived.window);
        const log = await Deno.readTextFile(`${root}/logs/error-recovery.log`);
        assert.match(log, /"action":"revived_in_tmux".*"result":"claude --resume gone-1"/);

        // It comes back, and dies again: scavenged again, never revived twice.
        await Deno.writeTextFile(`${root}/sessions/gone-1/status`, "alive\n");
        const again = await tick(dir, root, "--revive");
        assert.equal(by(again, "scavenge")?.session, "gone-1");
        assert.equal(by(again, "revive"), undefined);
        assert.match(
          again.find((l) => l.reason.startsWith("not revived"))!.reason,
          /not revived: it was revived once already/,
        );
        assert.equal((await windows(tmux, session)).length, 2);
      })
    );
  },
});

Deno.test({
  name:
    "stale.revive in a project's own config turns it on; stale.reviveCommand, the user's, is run",
  ignore: IGNORE,
  async fn() {
    await withTempDir((dir) =>
      withTmux(dir, async (tmux) => {
        const root = await project(dir, { stale: { revive: true } });
        // What it runs is the user's to choose: a project's config may not name a command.
        await Deno.mkdir(`${dir}/home/.config/lifeline`, { recursive: true });
        await Deno.writeTextFile(
          `${dir}/home/.config/lifeline/config.json`,
          JSON.stringify({ stale: { reviveCommand: [`${dir}/bin/claude`, "--resume"] } }),
        );
        const { session } = await deadSession(root, tmux, "gone-2");
        await fakeClaude(dir, tmux);
        // Its pane closed with it (claude ran as the pane's program); its tmux session lives on.
        await tmux.run(["new-window", "-d", "-t", `${session}:`, "sleep 60"]);
        const pane = JSON.parse(
          await Deno.readTextFile(`${root}/sessions/gone-2/session.json`),
        ).tmux_pane;
        await tmux.run(["kill-pane", "-t", pane]);
        const lines = await tick(dir, root);
        assert.match(
          lines.find((l) => l.action === "revive")!.reason,
          /bin\/claude --resume gone-2`$/,
        );
        assert.deepEqual(await ran(dir, "gone-2"), [`${root}/src`, "--resume", "gone-2"]);
        const window = lines.find((l) => l.action === "revive")!.window!;
        assert.ok((await windows(tmux, session)).includes(window), "in its tmux session");
      })
    );
  },
});

Deno.test({
  name:
    "never revived: revive off, ended on purpose, replaced by a newer session, quits unrecorded",
  ignore: IGNORE,
  async fn(t) {
    const cases: {
      name: string;
      extra: string[];
      before: (dir: string, root: string) => Promise<unknown>;
      reason: RegExp | null;
    }[] = [
      { name: "revive is off by default", extra: [], before: async () => {}, reason: null },
      {
        name: "the user quit it (SessionEnd prompt_input_exit, its registry busy at the time)",
        extra: ["--revive"],
        before: async (dir, root) => {
          const session = `${root}/sessions/gone`;
          const heartbeat = await Deno.readTextFile(`${session}/heartbeat`);
          await withLock(`${session}/session.json`, async () => {
            const ended = await runLifeline(["hook", "heartbeat"], {
              stdin: JSON.stringify({
                session_id: "gone",
                cwd: root,
                hook_event_name: "SessionEnd",
                reason: "prompt_input_exit",
              }),
              env: { HOME: `${dir}/home` },
            });
            assert.equal(ended.code, 0);
          }, { root, waitMs: 1000 });
          // Its status could not be written; its heartbeat is as old as it was.
          await Deno.writeTextFile(`${session}/heartbeat`, heartbeat);
          const end = JSON.parse(await Deno.readTextFile(`${session}/end.json`));
          end.at = Number(heartbeat) * 1000;
          await Deno.writeTextFile(`${session}/end.json`, JSON.stringify(end));
        },
        reason: /not revived: it was ended on purpose \(SessionEnd: prompt_input_exit\)/,
      },
      {
        name: "a session of the project started after it died",
        extra: ["--revive"],
        before: (_dir, root) => liveSession(root, "successor", 60),
        reason: /not revived: a newer session of the project is alive \(successor\)/,
      },
      {
        name: "no SessionEnd hook records quits",
        extra: ["--revive"],
        before: (_dir, root) => Deno.remove(`${root}/.claude/settings.json`),
        reason: /not revived: no SessionEnd hook runs `lifeline hook heartbeat`/,
      },
    ];
    for (const c of cases) {
      await t.step(c.name, () =>
        withTempDir((dir) =>
          withTmux(dir, async (tmux) => {
            const root = await project(dir);
            const { session } = await deadSession(root, tmux, "gone");
            await fakeClaude(dir, tmux);
            await c.before(dir, root);
            const lines = await tick(dir, root, ...c.extra);
            assert.equal(lines.find((l) => l.action === "scavenge")?.session, "gone");
            assert.equal(lines.find((l) => l.action === "revive"), undefined);
            const said = lines.find((l) => l.reason.startsWith("not revived"));
            if (c.reason) assert.match(said?.reason ?? "", c.reason);
            else assert.equal(said, undefined);
            assert.deepEqual((await windows(tmux, session)).length, 1);
            await assert.rejects(Deno.lstat(`${root}/sessions/gone/revived.json`));
          })
        ));
    }
  },
});
