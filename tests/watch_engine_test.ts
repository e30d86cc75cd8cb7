// The watcher engine in-process, against real private tmux servers with fake agents that record
// every byte they receive, and a clock the test moves. Each case of the watcher-safety issue
// (a keystroke that reached the wrong target, a fault that stopped recovery) is one test here.
import assert from "node:assert/strict";
import { CORPUS_DIR } from "./helpers/corpus.ts";
import { transcriptPath } from "./helpers/fixtures.ts";
import { agentScreen, clockTime, dialogScreen, WORKING } from "./helpers/screens.ts";
import { type AgentPane, type TmuxHarness, tmuxTest } from "./helpers/tmux_harness.ts";
import { testClock, testSettings, watchRun } from "./helpers/watch_harness.ts";

const HOUR = 3600_000;

/** A limit banner whose reset (in UTC) is `resetAt`. */
function limitScreen(resetAt: number, extra: { input?: string; below?: string[] } = {}): string {
  return agentScreen({
    conversation: [
      "❯ go on",
      `  ⎿  You've hit your 5-hour limit · resets ${clockTime(resetAt)} (UTC)`,
      ...(extra.below ?? []),
    ],
    ...(extra.input !== undefined ? { input: extra.input } : {}),
  });
}

/** A time well inside a minute, an hour before now: a banner with that reset has just passed. */
function passedReset(): { reset: number; clock: ReturnType<typeof testClock> } {
  const reset = Math.floor(Date.now() / 60_000) * 60_000 + 20 * 60_000;
  return { reset, clock: testClock(reset - 10 * 60_000) };
}

tmuxTest(
  "a limit is resumed once its reset has passed: the text, then Enter on its own",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    const pane = await tmux.addAgent(limitScreen(reset), { afterEnter: WORKING });
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "", "nothing before the reset");
    assert.match(run.about(pane).at(-1)!.reason, /^limited until .*; resume at /);
    clock.advance(11 * 60_000);
    await run.watcher.scan();
    const received = await tmux.received(pane);
    assert.deepEqual(received.map((r) => r.text), ["continue", "\r"]);
    assert.ok(received[1]!.at - received[0]!.at >= 150, "Enter came separately, after a pause");
    assert.match(run.about(pane).at(-1)!.reason, /^verified: "continue" then Enter: worked/);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue\r", "one resume per reset");
  },
);

tmuxTest(
  "a half-typed message is never submitted, even with an old 'Press Enter to retry' above",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    const draft = "git reset --hard origin/main && git push -f";
    const old529 = agentScreen({
      conversation: [
        "❯ show me the log",
        "● Bash(tail -3 build.log)",
        "  ⎿  API Error: 529 Overloaded. Press Enter to retry",
        "● That was an old line of the log; the build itself passed.",
      ],
      input: draft,
    });
    const limited = limitScreen(reset, { input: draft });
    const a = await tmux.addAgent(old529);
    const b = await tmux.addAgent(limited);
    const run = watchRun(tmux, { clock });
    clock.advance(11 * 60_000);
    await run.watcher.scan();
    clock.advance(6 * HOUR);
    await run.watcher.scan();
    assert.equal(await tmux.typed(a), "");
    assert.equal(await tmux.typed(b), "");
    assert.equal(
      run.about(a).at(-1)!.state,
      "normal",
      "an old line under a newer message is not an error",
    );
    const refusal = run.about(b).find((e) => e.action === "refuse");
    assert.match(refusal!.reason, /the input box holds text \("git reset --hard/);
  },
);

tmuxTest(
  "a prompt that appears while typing gets no Enter; the watcher says what it did",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    const prompt = dialogScreen(["❯ go on", "● Bash(rm -rf build/)"], [
      " Bash command",
      " rm -rf build/",
      " Do you want to proceed?",
      " ❯ 1. Yes",
      "   2. No",
    ]);
    const pane = await tmux.addAgent(limitScreen(reset), { onFirstKey: prompt });
    const run = watchRun(tmux, { clock });
    clock.advance(11 * 60_000);
    await run.watcher.scan();
    assert.equal(
      await tmux.typed(pane),
      "continue",
      "the text went in; no Enter, no key to the prompt",
    );
    const report = run.about(pane).find((e) => e.action === "report");
    assert.match(
      report!.reason,
      /typed "continue", then (the last lines show "rm -rf build\/"|a permission question on screen): no Enter; left the typed "continue" as it is/,
    );
    assert.ok(run.logs.some((l) => l.entry.result === "stopped before Enter"));
  },
);

tmuxTest(
  "text that did not land as typed is taken back, when the input box holds exactly it",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    // The agent starts working on its own just as the text arrives.
    const busy = agentScreen({
      conversation: ["❯ go on", "✻ Thinking… (2s · esc to interrupt)"],
      footer: ["  esc to interrupt"],
    });
    const pane = await tmux.addAgent(limitScreen(reset), { onFirstKey: busy });
    const run = watchRun(tmux, { clock });
    clock.advance(11 * 60_000);
    await run.watcher.scan();
    const received = (await tmux.received(pane)).map((r) => r.text).join("");
    assert.equal(received, "continue" + "\x7f".repeat(8), "typed, then 8 Backspaces; never Enter");
    assert.match(
      run.about(pane).find((e) => e.action === "report")!.reason,
      /took the typed text back/,
    );
    assert.match(await tmux.capture(pane), /❯\u00a0?\s*$/m);
  },
);

tmuxTest(
  "synchronised panes are never typed into: the keys would reach the other program",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    // A window twice as wide, so the agent's half is the usual 160 columns.
    const agent = await tmux.addAgent(limitScreen(reset), { afterEnter: WORKING, width: 321 });
    const other = await tmux.splitAgent(agent, "Really delete the database? [y/N] ", {
      command: "node",
    });
    await tmux.run(["set-window-option", "-t", agent.id, "synchronize-panes", "on"]);
    const run = watchRun(tmux, { clock });
    clock.advance(11 * 60_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(agent), "");
    assert.equal(await tmux.typed(other), "");
    assert.match(
      run.about(agent).find((e) => e.action === "refuse")!.reason,
      /synchronize-panes on/,
    );
    // Once synchronisation is off, the agent is resumed and the other program gets nothing.
    await tmux.run(["set-window-option", "-t", agent.id, "synchronize-panes", "off"]);
    await tmux.setScreen(agent, limitScreen(reset, { below: [" "] }));
    await run.watcher.scan();
    assert.equal(await tmux.typed(agent), "continue\r");
    assert.equal(await tmux.typed(other), "");
  },
);

tmuxTest(
  "a banner that is only tool output, quoted or in a code block, or years old is not a limit",
  async (_dir, tmux) => {
    const clock = testClock(Date.now());
    const screens = [
      [
        "❯ show the last note",
        "● Bash(tail -1 notes.txt)",
        "  ⎿  Claude AI usage limit reached|1700000000",
      ],
      [
        "❯ what does it print?",
        "● It prints this:",
        "",
        "      You've hit your 5-hour limit · resets 3pm (UTC)",
        "",
        "  and exits 1.",
      ],
      ["❯ what did it say?", "● It said:", "  > You've hit your 5-hour limit · resets 3pm (UTC)"],
      ["> go on", "  ⎿  Claude AI usage limit reached|1700000000"],
    ];
    const panes = [];
    for (const conversation of screens) {
      panes.push(await tmux.addAgent(agentScreen({ conversation })));
    }
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    clock.advance(6 * HOUR);
    await run.watcher.scan();
    for (const pane of panes) assert.equal(await tmux.typed(pane), "", pane.id);
    assert.match(
      run.about(panes[3]!).at(-1)!.reason,
      /a stale banner: its reset \(2023-11-14T22:13:20Z\)/,
    );
  },
);

tmuxTest(
  "a pane id that a new process reuses does not inherit the old pane's record",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    const first = await tmux.addAgent(limitScreen(reset));
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    const old = run.watcher.records.get(first.id)!;
    assert.ok(old.resume_at !== null);
    // The server goes away and a new one gives the same pane id to another agent.
    await tmux.close();
    const second = await tmux.addAgent(agentScreen({ conversation: ["❯ hi", "● Hello."] }));
    assert.equal(second.id, first.id);
    const again = watchRun(tmux, { clock, saved: { [first.id]: { ...old } } });
    await again.watcher.scan();
    const record = again.watcher.records.get(second.id)!;
    assert.notEqual(record.identity, old.identity);
    assert.equal(record.resume_at, null, "no schedule inherited");
  },
);

tmuxTest(
  "a pane in copy mode or one that closes mid-resume is that pane's failure; the others go on",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    const copy = await tmux.addAgent(limitScreen(reset));
    const closing = await tmux.addAgent(limitScreen(reset), { onFirstKey: "" });
    const fine = await tmux.addAgent(limitScreen(reset), { afterEnter: WORKING });
    await tmux.run(["copy-mode", "-t", copy.id]);
    const run = watchRun(tmux, { clock });
    // The closing pane's session is killed as soon as it receives its first key.
    const killer = (async () => {
      for (let i = 0; i < 100; i++) {
        if ((await tmux.received(closing)).length > 0) return await tmux.killPane(closing);
        await new Promise((r) => setTimeout(r, 30));
      }
    })();
    clock.advance(11 * 60_000);
    await run.watcher.scan();
    await killer;
    assert.equal(await tmux.typed(copy), "");
    assert.match(run.about(copy).find((e) => e.action === "refuse")!.reason, /in a mode/);
    assert.ok(
      run.about(closing).some((e) => /failed|gone|did not/.test(e.reason)),
      JSON.stringify(run.about(closing)),
    );
    assert.equal(await tmux.typed(fine), "continue\r");
  },
);

tmuxTest(
  "resets written as durations (resets in 2h 14m) are anchored to when they were first seen",
  async (_dir, tmux) => {
    const clock = testClock(Date.parse("2026-11-30T10:00:00Z"));
    const pane = await tmux.addAgent(
      agentScreen({
        conversation: ["❯ go on", "  ⎿  Limit reached (resets 2h 14m)"],
      }),
      { afterEnter: WORKING },
    );
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.match(run.about(pane).at(-1)!.reason, /limited until 2026-11-30T12:14:00Z/);
    clock.advance(2 * HOUR);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "", "still 14 minutes to go: not re-anchored");
    clock.advance(15 * 60_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue\r");
  },
);

tmuxTest(
  "an unreadable reset is looked at again only at its time, and said once",
  async (_dir, tmux) => {
    const clock = testClock(Date.now());
    const pane = await tmux.addAgent(agentScreen({
      conversation: ["❯ go on", "  ⎿  You've hit your 5-hour limit · resets soon-ish"],
    }));
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    await run.watcher.scan();
    await run.watcher.scan();
    const lines = run.about(pane);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.match(
      lines[0]!.reason,
      /reset time not understood \("resets soon-ish"\); next look at /,
    );
    assert.ok(run.watcher.nextWaitMs(60_000) <= 60_050);
    assert.equal(await tmux.typed(pane), "");
  },
);

tmuxTest(
  "panes due together are verified side by side, each by watching for its change",
  async (_dir, tmux) => {
    const { reset, clock } = passedReset();
    const panes = [];
    for (let i = 0; i < 3; i++) {
      panes.push(await tmux.addAgent(limitScreen(reset), { afterEnter: WORKING }));
    }
    const run = watchRun(tmux, { clock, settings: testSettings({ verifyDelayMs: 5000 }) });
    clock.advance(11 * 60_000);
    const started = Date.now();
    await run.watcher.scan();
    const took = Date.now() - started;
    for (const pane of panes) {
      assert.equal(await tmux.typed(pane), "continue\r");
      assert.match(run.about(pane).at(-1)!.reason, /^verified/);
    }
    assert.ok(took < 5000, `three panes in ${took} ms: no fixed 5 s wait per pane`);
  },
);

tmuxTest(
  "the recovery log of a pane with a registered session is that session's project's",
  async (dir, tmux) => {
    const { reset, clock } = passedReset();
    const root = `${dir}/project`;
    const registered = await tmux.addAgent(limitScreen(reset), { afterEnter: WORKING });
    const lone = await tmux.addAgent(limitScreen(reset), { afterEnter: WORKING });
    const pid = Number(
      (await tmux.run(["display-message", "-p", "-t", registered.id, "#{pane_pid}"])).trim(),
    );
    await Deno.mkdir(`${root}/sessions/s1`, { recursive: true });
    await Deno.writeTextFile(
      `${root}/sessions/s1/session.json`,
      JSON.stringify({
        session_id: "s1",
        root,
        cwd: root,
        transcript_path: null,
        tmux_pane: registered.id,
        tmux_socket: await tmux.socketPath(),
        agent_pid: pid,
        first_seen: new Date().toISOString(),
        last_seen: new Date().toISOString(),
        last_event: "PostToolUse",
      }),
    );
    const run = watchRun(tmux, { clock, roots: [root] });
    clock.advance(11 * 60_000);
    await run.watcher.scan();
    assert.ok(run.logs.filter((l) => l.entry.pane === registered.id).every((l) => l.root === root));
    assert.ok(run.logs.filter((l) => l.entry.pane === lone.id).every((l) => l.root === null));
    assert.ok(run.logs.some((l) => l.entry.pane === lone.id && l.entry.result === "resumed"));
  },
);

// ---------------------------------------------------------------------------------------------
// The session's records first, the screen gating every keystroke, on the real client's screens.

const corpusScreen = (name: string) => Deno.readTextFile(`${CORPUS_DIR}/probe/${name}.txt`);

tmuxTest(
  "a real 80x24 capture with a status line is resumed once after its reset; its armed twin is left alone",
  async (_dir, tmux) => {
    // The captures' limit resets at 12:08pm UTC; the watcher first sees them a little before.
    const clock = testClock(Date.parse("2026-12-01T12:00:00Z"));
    const busy = await corpusScreen("busy-thinking-080x24-status");
    const cancelled = await tmux.addAgent(await corpusScreen("429-oauth-cancelled-080x24-status"), {
      width: 80,
      height: 24,
      afterEnter: busy,
    });
    const armed = await tmux.addAgent(await corpusScreen("429-oauth-armed-080x24-status"), {
      width: 80,
      height: 24,
    });
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.deepEqual(run.events.map((e) => [e.pane, e.state, e.action]), [
      [cancelled.id, "usage_limit", "wait"],
      [armed.id, "native_autocontinue", "wait"],
    ]);
    clock.advance(9 * 60_000); // 12:09, a minute past the reset
    await run.watcher.scan();
    await run.watcher.scan();
    assert.equal(await tmux.typed(cancelled), "continue\r", "resumed once");
    assert.equal(await tmux.typed(armed), "", "the client continues by itself: left alone");
    assert.match(
      run.about(armed).at(-1)!.reason,
      /the client continues by itself at 2026-12-01T12:08:00Z/,
    );
  },
);

/** A registered session in `root` whose agent runs in `pane`, with the records it left. */
async function registerSession(
  tmux: TmuxHarness,
  pane: AgentPane,
  root: string,
  { transcript, stopFailure }: { transcript?: string; stopFailure?: Record<string, string> },
): Promise<void> {
  const dir = `${root}/sessions/s1`;
  await Deno.mkdir(dir, { recursive: true });
  const pid = Number(
    (await tmux.run(["display-message", "-p", "-t", pane.id, "#{pane_pid}"])).trim(),
  );
  await Deno.writeTextFile(
    `${dir}/session.json`,
    JSON.stringify({
      session_id: "s1",
      root,
      cwd: root,
      transcript_path: transcript ?? null,
      tmux_pane: pane.id,
      tmux_socket: await tmux.socketPath(),
      agent_pid: pid,
      agent_command: "claude",
      first_seen: "2026-12-01T10:00:00.000Z",
      last_seen: "2026-12-01T10:00:00.000Z",
      last_event: "PostToolUse",
    }),
  );
  if (stopFailure) {
    await Deno.writeTextFile(`${dir}/stop-failure.json`, JSON.stringify(stopFailure));
  }
}

tmuxTest(
  "the records say rate_limit while the banner has scrolled away: resumed after resetsAt",
  async (dir, tmux) => {
    const root = `${dir}/project`;
    // The transcript's limit resets at 1796127351000 (rateLimits.resetsAt), 2026-12-01T12:15:51Z.
    const transcript = transcriptPath("screen-429-oauth-stopwait-080x24");
    const clock = testClock(Date.parse("2026-12-01T12:00:00Z"));
    // The client's screen with nothing after the user's message: the banner is not on it.
    const idle = (await corpusScreen("idle-after-reply-080x24-status"))
      .replace("● Hi! This is the mock API answering.\n", "");
    assert.doesNotMatch(idle, /●/);
    const pane = await tmux.addAgent(idle, {
      width: 80,
      height: 24,
      afterEnter: await corpusScreen("busy-thinking-080x24-status"),
    });
    await registerSession(tmux, pane, root, { transcript });
    const run = watchRun(tmux, { clock, roots: [root] });
    await run.watcher.scan();
    const [first] = run.about(pane);
    assert.deepEqual([first!.state, first!.signal, first!.action], [
      "usage_limit",
      "records",
      "wait",
    ]);
    assert.equal(first!.reset_at, 1796127351000);
    clock.advance(17 * 60_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue\r");
    assert.ok(run.logs.every((l) => l.root === root), "logged to the session's project");
  },
);

tmuxTest(
  "the records say limited but the screen shows a newer reply (a /clear, a new question): left alone",
  async (dir, tmux) => {
    const root = `${dir}/project`;
    // Session A's transcript ends on its 5-hour limit (resets 12:15:51Z). The user ran /clear in
    // the same client and asked something new; the reply is on screen, the prompt idle.
    const transcript = transcriptPath("screen-429-oauth-stopwait-080x24");
    const clock = testClock(Date.parse("2026-12-01T12:30:00Z"));
    const pane = await tmux.addAgent(await corpusScreen("idle-after-reply-080x24-status"), {
      width: 80,
      height: 24,
    });
    await registerSession(tmux, pane, root, { transcript });
    const run = watchRun(tmux, { clock, roots: [root] });
    await run.watcher.scan();
    clock.advance(30 * 60_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "");
    assert.ok(run.about(pane).every((e) => e.state === "normal" && e.signal === "screen"));
  },
);

tmuxTest(
  "the records say limited but the screen shows a permission prompt: refused",
  async (dir, tmux) => {
    const root = `${dir}/project`;
    const clock = testClock(Date.parse("2026-12-01T16:00:00Z"));
    const pane = await tmux.addAgent(await corpusScreen("permission-prompt-080x24-status"), {
      width: 80,
      height: 24,
    });
    await registerSession(tmux, pane, root, {
      stopFailure: {
        ts: "2026-12-01T10:00:00.000Z",
        error: "rate_limit",
        message: "You've hit your 5-hour limit · resets 3pm (UTC)",
      },
    });
    const run = watchRun(tmux, { clock, roots: [root] });
    await run.watcher.scan();
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "");
    const said = run.about(pane).at(-1)!;
    assert.equal(said.state, "dangerous_prompt");
    assert.match(said.reason, /on screen: never typed into/);
  },
);
