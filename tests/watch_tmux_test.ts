// `lifeline watch tmux` as users run it: the CLI against real tmux servers (one per test, never
// the default one) with fake agents that draw screens and record every byte they receive. The
// numbered cases of the watcher-safety issue are here, at the process level, so each also runs
// against older builds; finer behaviour is in watch_engine_test.ts.
import assert from "node:assert/strict";
import { screen } from "./helpers/fixtures.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { REPO_DIR, runLifeline, spawnLifeline } from "./helpers/lifeline.ts";
import { agentScreen, clockTime, dialogScreen, monthDay, WORKING } from "./helpers/screens.ts";
import { registerSession } from "./helpers/sessions.ts";
import { type AgentPane, type TmuxHarness, tmuxTest } from "./helpers/tmux_harness.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** Watcher settings for tests: no margin or stagger unless a test wants them, quick checks. */
async function project(dir: string, watch: Record<string, unknown> = {}): Promise<string> {
  const root = `${dir}/project`;
  await Deno.mkdir(`${root}/.lifeline`, { recursive: true });
  await Deno.writeTextFile(
    `${root}/.lifeline/config.json`,
    JSON.stringify({
      watch: {
        resumeMarginSeconds: 0,
        staggerSeconds: 0,
        verifyDelaySeconds: 2,
        keyDelayMs: 200,
        ...watch,
      },
    }),
  );
  return root;
}

interface Line {
  ts: string;
  pane: string;
  session: string;
  state: string;
  signal: string | null;
  reset_at: string | null;
  action: string;
  reason: string;
  event?: string;
}

const envOf = (dir: string) => ({ HOME: `${dir}/home`, TZ: "UTC" });

function parseLines(stdout: string): Line[] {
  return stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

/**
 * One `watch tmux --once --json` scan, in this process (the command's own code, on the real tmux
 * server; the tests that need the process itself, its start line, signals and exit, spawn it).
 */
async function watchOnce(tmux: TmuxHarness, dir: string, extra: string[] = []): Promise<Line[]> {
  const result = await runInProcess(
    [
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--once",
      "--json",
      "--root",
      `${dir}/project`,
      ...extra,
    ],
    { env: envOf(dir), cwd: dir },
  );
  assert.equal(result.code, 0, result.stderr);
  return parseLines(result.stdout).filter((l) => l.pane !== undefined);
}

/** A limit banner whose reset passed five minutes ago. */
function passedBanner(extra: { input?: string } = {}): string {
  const passed = clockTime(Date.now() - 5 * 60_000);
  return agentScreen({
    conversation: ["❯ go on", `  ⎿  You've hit your 5-hour limit · resets ${passed} (UTC)`],
    ...extra,
  });
}

/** The banner wordings of reference §4a (and older), each with a reset five minutes ago. */
function passedWordings(now: number): [string, string[]][] {
  const past = now - 5 * 60_000;
  const time = clockTime(past);
  const ny = clockTime(past, "America/New_York");
  const la = clockTime(past, "America/Los_Angeles");
  const rome = clockTime(past, "Europe/Rome");
  const date = monthDay(past);
  const line = (text: string) => ["❯ go on", `  ⎿  ${text}`];
  return [
    ["5-hour", line(`You've hit your 5-hour limit · resets ${ny} (America/New_York)`)],
    ["weekly", line(`You've hit your weekly limit · resets ${date}, ${time} (UTC)`)],
    ["Opus", line(`You've hit your Opus limit · resets ${date}, ${time} (UTC)`)],
    ["Sonnet", line(`You've hit your Sonnet limit · resets ${date}, ${time}`)],
    ["progress saved", line(`You've hit your 5-hour limit · resets ${time} · progress saved`)],
    ["session", line(`You've hit your session limit · resets ${la} (America/Los_Angeles)`)],
    ["limit", line(`You've hit your limit · resets ${rome} (Europe/Rome)`)],
    ["weekly reached", line(`Weekly limit reached ∙ resets ${date}, ${time}`)],
    ["5-hour reached", line(`5-hour limit reached ∙ resets ${time}`)],
    ["out of credits", line(`You're out of usage credits · resets ${date}, ${time}`)],
    ["raw epoch", line(`Claude AI usage limit reached|${Math.floor(past / 1000)}`)],
    ["TUI", ["> go on", `  Claude usage limit reached. Your limit will reset at ${time} (UTC).`]],
  ];
}

tmuxTest(
  "every §4a wording is resumed once its reset has passed: text, then Enter on its own",
  async (dir, tmux) => {
    await project(dir);
    const panes: [string, AgentPane][] = [];
    for (const [name, conversation] of passedWordings(Date.now())) {
      panes.push([
        name,
        await tmux.addAgent(agentScreen({ conversation }), { afterEnter: WORKING }),
      ]);
    }
    const lines = await watchOnce(tmux, dir);
    for (const [name, pane] of panes) {
      const received = await tmux.received(pane);
      assert.deepEqual(received.map((r) => r.text), ["continue", "\r"], name);
      assert.ok(received[1]!.at - received[0]!.at >= 150, `${name}: Enter came separately`);
      assert.ok(lines.some((l) => l.pane === pane.id && l.reason.startsWith("verified")), name);
    }
  },
);

// 1. Enter into a half-typed message.
tmuxTest(
  "a half-typed message is never submitted, even with an old 'Press Enter to retry' above",
  async (dir, tmux) => {
    await project(dir);
    const draft = "git reset --hard origin/main && git push -f";
    const pane = await tmux.addAgent(agentScreen({
      conversation: [
        "❯ show me the end of the log",
        "● Bash(tail -3 build.log)",
        "  ⎿  API Error: 529 Overloaded. Press Enter to retry",
        "● That line is old; the build itself passed.",
      ],
      input: draft,
    }));
    const limited = await tmux.addAgent(passedBanner({ input: draft }));
    const lines = await watchOnce(tmux, dir);
    assert.equal(await tmux.typed(pane), "");
    assert.equal(await tmux.typed(limited), "");
    assert.match(
      lines.find((l) => l.pane === limited.id && l.action === "refuse")!.reason,
      /the input box holds text/,
    );
  },
);

// 2. Enter onto a permission prompt that appeared while typing.
tmuxTest("a permission prompt that appears while typing gets no Enter", async (dir, tmux) => {
  await project(dir);
  const prompt = dialogScreen(["❯ go on", "● Bash(git push --force origin main)"], [
    " Bash command",
    " git push --force origin main",
    " Do you want to proceed?",
    " ❯ 1. Yes",
    "   2. No",
  ]);
  const pane = await tmux.addAgent(passedBanner(), { onFirstKey: prompt });
  const lines = await watchOnce(tmux, dir);
  assert.equal(await tmux.typed(pane), "continue", "no Enter reached the prompt");
  assert.match(lines.find((l) => l.pane === pane.id && l.action === "report")!.reason, /no Enter/);
});

// 3. Typing into another program through synchronised panes.
tmuxTest("a window with synchronize-panes on is never typed into", async (dir, tmux) => {
  await project(dir);
  const agent = await tmux.addAgent(passedBanner(), { afterEnter: WORKING, width: 321 });
  const other = await tmux.splitAgent(agent, "Drop the production database? [y/N] ", {
    command: "node",
  });
  await tmux.run(["set-window-option", "-t", agent.id, "synchronize-panes", "on"]);
  const lines = await watchOnce(tmux, dir);
  assert.equal(await tmux.typed(agent), "");
  assert.equal(await tmux.typed(other), "");
  assert.match(lines.find((l) => l.action === "refuse")!.reason, /synchronize-panes on/);
});

// 4. A banner that is only tool output or quoted text.
tmuxTest(
  "a banner that is only a tool's output, or years old, is not a limit",
  async (dir, tmux) => {
    await project(dir);
    const pane = await tmux.addAgent(agentScreen({
      conversation: [
        "❯ show me the last note",
        "● Bash(tail -1 notes.txt)",
        "  ⎿  Claude AI usage limit reached|1700000000",
      ],
    }));
    const old = await tmux.addAgent(agentScreen({
      conversation: ["> go on", "  ⎿  Claude AI usage limit reached|1700000000"],
    }));
    const lines = await watchOnce(tmux, dir);
    assert.equal(await tmux.typed(pane), "");
    assert.equal(await tmux.typed(old), "");
    assert.equal(lines.find((l) => l.pane === pane.id)!.state, "normal");
    assert.match(lines.find((l) => l.pane === old.id)!.reason, /stale banner/);
  },
);

// 5. Two watchers on one tmux server.
tmuxTest(
  "one watcher per server, however it is named (--socket, --socket-path, $TMUX) and whatever the state directory",
  async (dir, tmux) => {
    await project(dir);
    await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello."] }));
    const path = await tmux.socketPath();
    const env = envOf(dir);
    const first = spawnLifeline([
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--interval",
      "60",
      "--root",
      `${dir}/project`,
    ], { env });
    const reader = first.stdout.getReader();
    await reader.read(); // the start line: it holds the lock
    reader.releaseLock();
    for (
      const [how, args, extraEnv] of [
        ["--socket-path", ["--socket-path", path], {}],
        ["$TMUX", [], { TMUX: `${path},1,0` }],
        // Another HOME, so another state directory: still this server's second watcher.
        ["another HOME", ["--socket", tmux.socket], { HOME: `${dir}/other-home` }],
        ["LIFELINE_STATE_DIR", ["--socket", tmux.socket], { LIFELINE_STATE_DIR: `${dir}/st` }],
      ] as const
    ) {
      const second = await runLifeline([
        "watch",
        "tmux",
        "--once",
        ...args,
        "--root",
        `${dir}/project`,
      ], {
        env: { ...env, ...extraEnv },
      });
      assert.equal(second.code, 1, `${how}: ${second.stderr}`);
      assert.match(
        second.stderr,
        new RegExp(`already running on this tmux server \\(pid ${first.pid}\\)`),
        how,
      );
    }
    first.kill("SIGTERM");
    assert.equal((await first.status).code, 0);
    await first.stdout.cancel();
    await first.stderr.cancel();
  },
);

tmuxTest(
  "a socket renamed away names its own server: watching it is not 'already running'",
  async (dir, tmux) => {
    await project(dir);
    await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello."] }));
    const path = await tmux.socketPath();
    // The first server's socket moves; a second server starts under the first name. Both
    // servers report the first path as their socket_path.
    await Deno.rename(path, `${path}-moved`);
    const second = `${tmux.socket}`;
    await new Deno.Command("tmux", { args: ["-L", second, "new-session", "-d", "sleep 60"] })
      .output();
    const env = envOf(dir);
    const watcher = spawnLifeline(
      ["watch", "tmux", "--socket", second, "--interval", "60", "--root", `${dir}/project`],
      { env },
    );
    const reader = watcher.stdout.getReader();
    await reader.read();
    reader.releaseLock();
    try {
      const moved = await runLifeline(
        ["watch", "tmux", "--once", "--socket-path", `${path}-moved`, "--root", `${dir}/project`],
        { env },
      );
      assert.equal(moved.code, 0, moved.stderr);
      assert.match(moved.stdout, new RegExp(`watching tmux server ${path}-moved `));
    } finally {
      watcher.kill("SIGTERM");
      await watcher.status;
      await watcher.stdout.cancel();
      await watcher.stderr.cancel();
      await new Deno.Command("tmux", { args: ["-S", `${path}-moved`, "kill-server"] }).output();
    }
  },
);

// 6. Recycled pane ids inherit state.
tmuxTest(
  "a recreated server's panes start fresh: a reused pane id inherits nothing",
  async (dir, tmux) => {
    await project(dir);
    const first = await tmux.addAgent(passedBanner(), { afterEnter: WORKING });
    await watchOnce(tmux, dir);
    assert.equal(await tmux.typed(first), "continue\r");
    await tmux.close();
    // Another agent, same pane id, same banner: a limit of its own, to be resumed.
    const second = await tmux.addAgent(passedBanner(), { afterEnter: WORKING });
    assert.equal(second.id, first.id);
    const lines = await watchOnce(tmux, dir);
    assert.equal(await tmux.typed(second), "continue\r", JSON.stringify(lines));
  },
);

// 7. Faults that stop recovery for every pane.
tmuxTest(
  "a pane in copy mode is that pane's refusal; the watcher goes on with the others",
  async (dir, tmux) => {
    await project(dir);
    const copy = await tmux.addAgent(passedBanner());
    const fine = await tmux.addAgent(passedBanner(), { afterEnter: WORKING });
    await tmux.run(["copy-mode", "-t", copy.id]);
    const lines = await watchOnce(tmux, dir);
    assert.equal(await tmux.typed(copy), "");
    assert.match(
      lines.find((l) => l.pane === copy.id && l.action === "refuse")!.reason,
      /in a mode/,
    );
    assert.equal(await tmux.typed(fine), "continue\r");
  },
);

// 8. A config interval above 2^31 ms.
tmuxTest(
  "durations in the config are bounded, with a message that names the key",
  async (dir, tmux) => {
    await project(dir, { intervalSeconds: 3_000_000 });
    await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello."] }));
    const result = await runLifeline([
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--root",
      `${dir}/project`,
    ], {
      env: envOf(dir),
      timeoutMs: 10_000,
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /watch\.intervalSeconds: must be at most 86400/);
  },
);

// 9. tmux missing.
Deno.test({ name: "without tmux it says so in one line and exits 1", ignore: IGNORE }, async () => {
  await withTempDir(async (dir) => {
    const result = await runLifeline(["watch", "tmux", "--once"], {
      env: { HOME: dir, PATH: `${dir}/empty` },
    });
    assert.equal(result.code, 1);
    assert.deepEqual(result.stderr.trim().split("\n"), [
      "error: tmux is not installed, so there is nothing to watch",
      "hint: install tmux (apt install tmux, brew install tmux)",
    ]);
  });
});

// 10. --dry-run leaves state behind.
tmuxTest("--dry-run decides but types nothing and writes no state", async (dir, tmux) => {
  await project(dir);
  const pane = await tmux.addAgent(passedBanner());
  for (let run = 0; run < 2; run++) {
    const lines = await watchOnce(tmux, dir, ["--dry-run"]);
    assert.ok(
      lines.some((l) => l.action === "resume" && /dry run: would type "continue"/.test(l.reason)),
      `run ${run + 1}`,
    );
  }
  assert.equal(await tmux.typed(pane), "");
  const watchDir = `${dir}/home/.local/state/lifeline/watch`;
  assert.deepEqual(await listDir(watchDir).catch(() => []), []);
  const status = await runLifeline(["status", "--json", "--root", `${dir}/project`], {
    env: envOf(dir),
  });
  assert.deepEqual(JSON.parse(status.stdout).watched_panes, []);
});

// 11. The capped backoff for an unreadable reset.
tmuxTest(
  "an unreadable reset is said once, then looked at again only at its time",
  async (dir, tmux) => {
    await project(dir);
    const pane = await tmux.addAgent(agentScreen({
      conversation: ["❯ go on", "  ⎿  You've hit your 5-hour limit · resets when it resets"],
    }));
    const watcher = spawnLifeline([
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--interval",
      "1",
      "--json",
      "--root",
      `${dir}/project`,
    ], { env: envOf(dir) });
    await new Promise((r) => setTimeout(r, 3500));
    watcher.kill("SIGTERM");
    const output = await watcher.output();
    const lines = parseLines(new TextDecoder().decode(output.stdout)).filter((l) =>
      l.pane === pane.id
    );
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.match(lines[0]!.reason, /reset time not understood .*; next look at \d{4}-/);
  },
);

// 12. Relative resets.
tmuxTest("a relative reset ('resets in 2h 14m') is understood", async (dir, tmux) => {
  await project(dir);
  const pane = await tmux.addAgent(agentScreen({
    conversation: ["❯ go on", "  ⎿  You've hit your 5-hour limit · resets in 2h 14m"],
  }));
  const [line] = (await watchOnce(tmux, dir)).filter((l) => l.pane === pane.id);
  assert.equal(line!.action, "wait");
  assert.match(line!.reason, /^limited until /);
  const until = Date.parse(line!.reset_at!);
  assert.ok(Math.abs(until - (Date.now() + 134 * 60_000)) < 60_000, line!.reset_at!);
});

// 13. The long-running commands say nothing.
tmuxTest(
  "it says what it watches when it starts, when the server goes and comes back, and when it stops",
  async (dir, tmux) => {
    await project(dir);
    await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello."] }));
    const watcher = spawnLifeline([
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--interval",
      "1",
      "--root",
      `${dir}/project`,
    ], { env: envOf(dir) });
    await new Promise((r) => setTimeout(r, 1500));
    await tmux.close();
    await new Promise((r) => setTimeout(r, 1500));
    await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello again."] }));
    await new Promise((r) => setTimeout(r, 1500));
    watcher.kill("SIGINT");
    const output = await watcher.output();
    const text = new TextDecoder().decode(output.stdout);
    assert.equal(output.code, 0);
    assert.match(text, /watching tmux server \/\S+ \(pid \d+\) every 1 s; state \S+; log /);
    assert.match(text, /the tmux server on \S+ is not running; waiting for it/);
    assert.match(text, /the tmux server is back \(pid \d+\)/);
    assert.match(text.trimEnd().split("\n").at(-1)!, /stopped$/);
  },
);

tmuxTest(
  "--once on a server that does not run, or a --target that does not exist, is an error",
  async (dir, tmux) => {
    await project(dir);
    const none = await runLifeline(["watch", "tmux", "--socket", `${tmux.socket}-none`, "--once"], {
      env: envOf(dir),
    });
    assert.equal(none.code, 1);
    assert.match(
      none.stderr,
      /^error: no tmux server runs on \/\S+-none \(or its socket was moved or renamed\)\n/,
    );
    await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello."] }));
    for (const target of ["%99", "no-such-session"]) {
      const missing = await runLifeline([
        "watch",
        "tmux",
        "--socket",
        tmux.socket,
        "--once",
        "--target",
        target,
      ], {
        env: envOf(dir),
      });
      assert.equal(missing.code, 1, target);
      assert.match(missing.stderr, new RegExp(`error: no agent pane matches --target ${target}`));
    }
  },
);

// 14. The recovery log lands in the directory the watcher was started from.
tmuxTest(
  "a pane without a registered session is logged to lifeline's state directory, not the cwd",
  async (dir, tmux) => {
    await project(dir);
    await Deno.mkdir(`${dir}/elsewhere`);
    await tmux.addAgent(passedBanner(), { afterEnter: WORKING });
    const result = await runLifeline([
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--once",
      "--root",
      `${dir}/project`,
    ], {
      env: envOf(dir),
      cwd: `${dir}/elsewhere`,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await listDir(`${dir}/elsewhere`), []);
    const log = await Deno.readTextFile(
      `${dir}/home/.local/state/lifeline/logs/error-recovery.log`,
    );
    assert.match(log, /"result":"resumed"/);
  },
);

// 15. Messages must describe the action they accompany.
tmuxTest(
  "what it says matches what it did: no placeholders, no wait reason on a resume, one wording",
  async (dir, tmux) => {
    await project(dir, { verifyDelaySeconds: 1, nativeMarginSeconds: 0 });
    // The agent ignores the resume: the banner stays.
    const ignoring = await tmux.addAgent(passedBanner());
    const prompt = await tmux.addAgent(await screen("screen-permission-01-permission-prompt"));
    const lines = await watchOnce(tmux, dir);
    for (const line of lines) assert.doesNotMatch(line.reason, /<name>|\$\{/, line.reason);
    const resumes = lines.filter((l) => l.pane === ignoring.id && l.action === "resume");
    assert.match(resumes[0]!.reason, /^typed "continue" then Enter \(the limit reset at /);
    assert.match(resumes.at(-1)!.reason, /did not work \(now usage_limit: a usage-limit banner/);
    const said = lines.find((l) => l.pane === prompt.id)!.reason;
    const status = await runLifeline(["status", "--json", "--root", `${dir}/project`], {
      env: envOf(dir),
    });
    const watched = JSON.parse(status.stdout).watched_panes.find((p: { pane: string }) =>
      p.pane === prompt.id
    );
    assert.equal(watched.refusal, said, "status says what the watcher said");
  },
);

// 16. Verifying a resume blocks the scan for 5 s per pane.
tmuxTest(
  "three due panes are typed into and verified side by side, not 5 s apart",
  async (dir, tmux) => {
    await project(dir, { verifyDelaySeconds: 5 });
    const panes = [];
    for (let i = 0; i < 3; i++) {
      panes.push(
        await tmux.addAgent(passedBanner(), { afterEnter: WORKING }),
      );
    }
    const started = Date.now();
    await watchOnce(tmux, dir);
    const took = Date.now() - started;
    for (const pane of panes) assert.equal(await tmux.typed(pane), "continue\r");
    assert.ok(took < 8000, `took ${took} ms`);
  },
);

tmuxTest(
  "nothing is typed: native auto-continue, retry rows, an unsafe limit menu, old or quoted banners",
  async (dir, tmux) => {
    await project(dir);
    const now = Date.now();
    const native = (await screen("screen-429-oauth-90-final")).replaceAll(
      "5:54pm",
      clockTime(now + 2 * 3600_000),
    );
    const passed = clockTime(now - 60_000);
    const menu = (choice: string) =>
      dialogScreen(["❯ go on", `  ⎿  You've hit your 5-hour limit · resets ${passed} (UTC)`], [
        " What do you want to do?",
        ...["Stop and wait for limit to reset", "Upgrade your plan"].map((option) =>
          option === choice ? ` ❯ ${option}` : `   ${option}`
        ),
      ]);
    const cases: Record<string, string> = {
      native,
      retrying: agentScreen({
        conversation: [
          "❯ say hi",
          "✻ 5-hour limit reached · retrying in 4s (5:54pm) · attempt 1/3",
        ],
        footer: ["  esc to interrupt"],
      }),
      "unsafe menu": menu("Upgrade your plan"),
      "old banner": agentScreen({
        conversation: [
          "❯ go on",
          `  ⎿  You've hit your 5-hour limit · resets ${passed} (UTC)`,
          "❯ continue",
          "● Resumed; the tests pass now.",
        ],
      }),
      quoted: agentScreen({
        conversation: [
          "❯ what happened?",
          `● It printed "You've hit your 5-hour limit · resets ${passed} (UTC)" and stopped.`,
        ],
      }),
      permission: await screen("screen-permission-01-permission-prompt"),
      trust: await screen("screen-trust-01-trust-dialog"),
    };
    const panes = new Map<string, AgentPane>();
    for (const [name, text] of Object.entries(cases)) panes.set(name, await tmux.addAgent(text));
    const safe = await tmux.addAgent(menu("Stop and wait for limit to reset"));
    const lines = await watchOnce(tmux, dir);
    for (const [name, pane] of panes) assert.equal(await tmux.typed(pane), "", name);
    const state = (pane: AgentPane) => lines.find((l) => l.pane === pane.id)?.state;
    assert.equal(state(panes.get("native")!), "native_autocontinue");
    assert.equal(state(panes.get("retrying")!), "busy");
    assert.equal(state(panes.get("unsafe menu")!), "limit_menu");
    assert.equal(state(panes.get("permission")!), "dangerous_prompt");
    assert.equal(state(panes.get("trust")!), "dangerous_prompt");
    assert.equal(await tmux.typed(safe), "\r", "the safe menu choice gets Enter alone");
  },
);

tmuxTest("panes of other programs are not watched", async (dir, tmux) => {
  await project(dir);
  const editor = await tmux.addAgent(passedBanner(), { command: "vim" });
  const lines = await watchOnce(tmux, dir);
  assert.ok(lines.every((l) => l.pane !== editor.id));
  assert.equal(await tmux.typed(editor), "");
});

tmuxTest("after kill -9 the next watcher takes over at once", async (dir, tmux) => {
  await project(dir);
  await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello."] }));
  const args = [
    "watch",
    "tmux",
    "--socket",
    tmux.socket,
    "--interval",
    "1",
    "--root",
    `${dir}/project`,
  ];
  const first = spawnLifeline(args, { env: envOf(dir) });
  const reader = first.stdout.getReader();
  await reader.read();
  reader.releaseLock();
  first.kill("SIGKILL");
  await first.status;
  await first.stdout.cancel();
  await first.stderr.cancel();
  const next = await runLifeline([...args, "--once"], { env: envOf(dir) });
  assert.equal(next.code, 0, next.stderr);
});

tmuxTest(
  "a corrupt watcher state is moved aside, and the watcher starts afresh",
  async (dir, tmux) => {
    await project(dir);
    const resetAt = Math.floor(Date.now() / 1000) + 3600;
    await tmux.addAgent(
      agentScreen({ conversation: ["> go on", `  ⎿  Claude AI usage limit reached|${resetAt}`] }),
    );
    await watchOnce(tmux, dir);
    const stateDir = `${dir}/home/.local/state/lifeline/watch`;
    const [state] = (await listDir(stateDir)).filter((n) => n.endsWith(".json"));
    await Deno.writeTextFile(
      `${stateDir}/${state}`,
      '{"version": 2, "panes": {"%0": {"pane": "%0", "stat',
    );
    const lines = await watchOnce(tmux, dir);
    assert.deepEqual(lines.map((l) => [l.state, l.action]), [["usage_limit", "wait"]]);
    const moved = (await listDir(stateDir)).filter((n) => n.startsWith(`${state}.corrupt-`));
    assert.equal(moved.length, 1);
    assert.equal(
      await Deno.readTextFile(`${stateDir}/${moved[0]}`),
      '{"version": 2, "panes": {"%0": {"pane": "%0", "stat',
    );
    const saved = JSON.parse(await Deno.readTextFile(`${stateDir}/${state}`));
    assert.equal(saved.panes["%0"].reset_at, resetAt * 1000);
  },
);

tmuxTest(
  "a failed resume is retried later, not at once, even by a restarted watcher",
  async (dir, tmux) => {
    await project(dir, { verifyDelaySeconds: 1 });
    const pane = await tmux.addAgent(passedBanner());
    const first = await watchOnce(tmux, dir);
    assert.match(first.at(-1)!.reason, /did not work .* attempt 1\/3, next at/);
    const second = await watchOnce(tmux, dir);
    assert.deepEqual(second.map((l) => l.action), ["wait"]);
    assert.equal(await tmux.typed(pane), "continue\r");
  },
);

tmuxTest(
  "--explain shows how a pane is read and what would be decided, and types nothing",
  async (dir, tmux) => {
    await project(dir);
    const capture = await Deno.readTextFile(
      `${REPO_DIR}/tests/fixtures/screens/probe/429-oauth-cancelled-080x24-status.txt`,
    );
    const pane = await tmux.addAgent(capture, { width: 80, height: 24 });
    const text = await runLifeline([
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--explain",
      pane.id,
      "--root",
      `${dir}/project`,
    ], { env: envOf(dir) });
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, new RegExp(`^pane ${pane.id} \\(agent0, runs claude, 80 columns\\)$`));
    assert.ok(lines.includes("session: none registered for this pane"));
    assert.ok(
      lines.some((l) =>
        /^ {2}result +You've hit your 5-hour limit · resets 12:08pm \(UTC\)/.test(l)
      ),
      text.stdout,
    );
    assert.ok(lines.includes('input box: "" (rules)'));
    assert.match(text.stdout, /^footer: \[Opus 4\.8\] │ Context 12% │ 5h:100% \| ⏵⏵ auto mode on/m);
    assert.match(
      text.stdout,
      /^screen: usage_limit \(rule: a usage-limit banner \(you've hit your limit\)\); idle true; layout recognised; reset "resets 12:08pm \(UTC\)"$/m,
    );
    assert.match(text.stdout, /^records: none \(no registered session\)$/m);
    assert.match(text.stdout, /^decision: usage_limit \(signal screen\): (wait|resume) - /m);
    const json = await runLifeline([
      "watch",
      "tmux",
      "--socket",
      tmux.socket,
      "--explain",
      pane.id,
      "--json",
      "--root",
      `${dir}/project`,
    ], { env: envOf(dir) });
    const explained = JSON.parse(json.stdout);
    assert.equal(explained.reading.state, "usage_limit");
    assert.equal(explained.screen.input, "");
    assert.equal(await tmux.typed(pane), "");
    assert.deepEqual(
      await listDir(`${dir}/home/.local/state/lifeline/watch`).catch(() => []),
      [],
      "no state written",
    );
  },
);

tmuxTest(
  "watch pause keeps the watcher's hands off a pane until watch resume; status says so",
  async (dir, tmux) => {
    await project(dir);
    const pane = await tmux.addAgent(passedBanner(), { afterEnter: WORKING });
    const paused = await runLifeline(["watch", "pause", pane.id, "--socket", tmux.socket], {
      env: envOf(dir),
    });
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(
      paused.stdout,
      new RegExp(`^paused pane of ${pane.id} \\(agent0\\): .*lifeline watch resume ${pane.id}`),
    );
    const lines = await watchOnce(tmux, dir);
    assert.equal(await tmux.typed(pane), "");
    assert.match(
      lines.find((l) => l.pane === pane.id)!.reason,
      /^paused: @lifeline is off for this pane/,
    );
    const status = await runLifeline(["status", "--json", "--root", `${dir}/project`], {
      env: envOf(dir),
    });
    assert.equal(JSON.parse(status.stdout).watched_panes[0].paused, true);
    const resumed = await runLifeline(["watch", "resume", pane.id, "--socket", tmux.socket], {
      env: envOf(dir),
    });
    assert.equal(resumed.code, 0, resumed.stderr);
    await watchOnce(tmux, dir);
    assert.equal(await tmux.typed(pane), "continue\r");
    const missing = await runLifeline(["watch", "pause", "%99", "--socket", tmux.socket], {
      env: envOf(dir),
    });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /there is no pane %99/);
    // A pane id in range that names no pane (tmux answers with an empty line, successfully).
    const unknown = await runLifeline(
      ["watch", "tmux", "--explain", "%7", "--socket", tmux.socket],
      {
        env: envOf(dir),
      },
    );
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^error: there is no pane %7 on this tmux server\nhint: /);
  },
);

tmuxTest(
  "what needs the user goes to notify.command, once per pane per episode",
  async (dir, tmux) => {
    await project(dir);
    const sink = `${dir}/notified.txt`;
    // The command is the user's to choose: it lives in the user config, never a project's.
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
            "notify",
          ],
        },
      }),
    );
    const pane = await tmux.addAgent(passedBanner({ input: "half a thought" }));
    await watchOnce(tmux, dir);
    await watchOnce(tmux, dir);
    await tmux.setScreen(pane, passedBanner({ input: "another thought" }));
    await watchOnce(tmux, dir);
    const lines = (await Deno.readTextFile(sink)).trim().split("\n");
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0]!,
      new RegExp(
        `^refused\\|${pane.id}\\|${pane.id} \\(agent0\\): not typing into ${pane.id}: the input box holds text`,
      ),
    );
    assert.equal(await tmux.typed(pane), "");
  },
);

// The second red-team run, at the process level.

tmuxTest(
  "one server reached through a hard link to its socket still gets one watcher",
  async (dir, tmux) => {
    await project(dir);
    const pane = await tmux.addAgent(passedBanner(), { afterEnter: WORKING });
    const link = `${dir}/shared.sock`;
    await Deno.link(await tmux.socketPath(), link);
    const first = spawnLifeline(
      ["watch", "tmux", "--socket", tmux.socket, "--interval", "2", "--root", `${dir}/project`],
      { env: envOf(dir) },
    );
    try {
      const reader = first.stdout.getReader();
      await reader.read(); // its start line: it holds its locks
      reader.releaseLock();
      // Another HOME and TMUX_TMPDIR too: no directory of the first watcher's is shared.
      await Deno.mkdir(`${dir}/tmux-tmp`, { mode: 0o700 });
      const second = await runLifeline(
        ["watch", "tmux", "--socket-path", link, "--once", "--root", `${dir}/project`],
        { env: { ...envOf(dir), HOME: `${dir}/home2`, TMUX_TMPDIR: `${dir}/tmux-tmp` } },
      );
      assert.equal(second.code, 1, second.stdout);
      assert.match(second.stderr, /^error: already running on this tmux server \(pid \d+\)\n/);
      assert.match(second.stderr, /its lock is \S+lifeline-watch-server-\d+\.lock/);
      await tmux.waitForScreen(pane, "Working");
    } finally {
      first.kill("SIGTERM");
      await first.status;
      await first.stdout.cancel().catch(() => {});
      await first.stderr.cancel().catch(() => {});
    }
    assert.equal(await tmux.typed(pane), "continue\r", "typed once, by the first watcher");
  },
);

tmuxTest(
  "--explain decides as the watcher does: a paused pane, synchronised panes, another program",
  async (dir, tmux) => {
    await project(dir);
    const paused = await tmux.addAgent(passedBanner());
    await tmux.run(["set-option", "-p", "-t", paused.id, "@lifeline", "off"]);
    const synced = await tmux.addAgent(passedBanner(), { width: 321 });
    await tmux.splitAgent(synced, "$ ", { command: "bash" });
    await tmux.run(["set-window-option", "-t", synced.id, "synchronize-panes", "on"]);
    const other = await tmux.addAgent(passedBanner(), { command: "node" });
    const cases: [AgentPane, RegExp][] = [
      [paused, /^decision: .*: refuse - paused: @lifeline is off/m],
      [synced, /^decision: .*: refuse - the window has synchronize-panes on/m],
      [other, /^decision: .*: refuse - the pane now runs node/m],
    ];
    for (const [pane, decision] of cases) {
      const explained = await runLifeline(
        ["watch", "tmux", "--socket", tmux.socket, "--explain", pane.id],
        { env: envOf(dir) },
      );
      assert.equal(explained.code, 0, explained.stderr);
      assert.match(explained.stdout, decision);
      assert.doesNotMatch(explained.stdout, /: resume - /);
    }
    for (const pane of [paused, synced, other]) assert.equal(await tmux.typed(pane), "");
  },
);

tmuxTest(
  "--explain of a pane joined to a session it cannot verify says the records were not read",
  async (dir, tmux) => {
    const root = await project(dir);
    const pane = await tmux.addAgent(passedBanner());
    const pid = Number(
      (await tmux.run(["display-message", "-p", "-t", pane.id, "#{pane_pid}"])).trim(),
    );
    await registerSession(root, "S1", {
      heartbeatAgo: 0,
      agentPid: pid,
      record: {
        tmux_pane: pane.id,
        tmux_socket: await tmux.socketPath(),
        agent_command: "claude",
        // Another process that had this pid: its start a day before this one's.
        agent_started: Date.now() - 86_400_000,
        agent_start_id: "x/1",
      },
    });
    const explained = await runLifeline(
      ["watch", "tmux", "--socket", tmux.socket, "--explain", pane.id, "--root", root],
      { env: envOf(dir) },
    );
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(explained.stdout, /^session: S1 in /m);
    assert.match(explained.stdout, /^records: not read: /m);
    assert.doesNotMatch(explained.stdout, /no registered session/);
  },
);

tmuxTest(
  "--dry-run writes no file anywhere and runs no notify.command, even for what needs the user",
  async (dir, tmux) => {
    await project(dir);
    const sink = `${dir}/notified.txt`;
    await Deno.mkdir(`${dir}/home/.config/lifeline`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/home/.config/lifeline/config.json`,
      JSON.stringify({ notify: { command: ["sh", "-c", `echo "$LIFELINE_EVENT" >> ${sink}`] } }),
    );
    const synced = await tmux.addAgent(passedBanner(), { width: 321 });
    await tmux.splitAgent(synced, "$ ", { command: "bash" });
    await tmux.run(["set-window-option", "-t", synced.id, "synchronize-panes", "on"]);
    const billing = await tmux.addAgent(
      await Deno.readTextFile(
        `${REPO_DIR}/tests/fixtures/screens/probe/credit-balance-too-low-080x24.txt`,
      ),
      { width: 80, height: 24 },
    );
    // The fake agents' own files are here too: they write only when a key reaches them.
    const files = () => walk(dir);
    const before = await files();
    const lines = await watchOnce(tmux, dir, ["--dry-run"]);
    assert.equal(lines.find((l) => l.pane === billing.id)?.action, "report");
    assert.equal(lines.find((l) => l.pane === synced.id)?.action, "refuse");
    assert.deepEqual(await files(), before, "no file created or removed");
    await assert.rejects(Deno.stat(sink), Deno.errors.NotFound);
  },
);

/** Every file below `dir`, by path. */
async function walk(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) found.push(...await walk(path));
    else found.push(path);
  }
  return found.sort();
}
