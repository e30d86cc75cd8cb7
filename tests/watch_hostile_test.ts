// The watcher against screens and states someone else built to break it (a red-team run on
// real tmux servers; each case is one of its findings). The watcher runs in-process with a clock
// the test moves; the agents are fake_agent.ts, which, like the client, appends what is typed to
// whatever the input box already holds.
import assert from "node:assert/strict";
import { CORPUS_DIR } from "./helpers/corpus.ts";
import { agentScreen, clockTime, WORKING } from "./helpers/screens.ts";
import { type AgentPane, type TmuxHarness, tmuxTest } from "./helpers/tmux_harness.ts";
import { testClock, testSettings, watchRun } from "./helpers/watch_harness.ts";
import { ServerDownError, tmuxClient, Watcher } from "../lib/watch/engine.ts";
import { newRecord, type PaneRecord } from "../lib/watch/watch_policy.ts";
import { watchStateCodec } from "../lib/watch/state.ts";

/** A reset 10 minutes ago, and a clock 20 minutes after the watcher's first look at it. */
function passed(): { reset: number; clock: ReturnType<typeof testClock> } {
  const reset = Math.floor(Date.now() / 60_000) * 60_000 - 10 * 60_000;
  return { reset, clock: testClock(reset + 10 * 60_000) };
}

/** `text` drawn as the client draws a placeholder: the first cell reversed, the rest dim. */
const dim = (text: string) => `\x1b[7m${text[0]}\x1b[0;2m${text.slice(1)}\x1b[0m`;

const bannerLine = (reset: number, name = "5-hour") =>
  `  ⎿  You've hit your ${name} limit · resets ${clockTime(reset)} (UTC)`;

/** The screen of a limited agent, with what a case puts around it. */
function limited(
  reset: number,
  { above = [], input = "", footer }: { above?: string[]; input?: string; footer?: string[] } = {},
): string {
  return agentScreen({
    conversation: [...above, "❯ go on", bannerLine(reset)],
    input,
    ...(footer ? { footer } : {}),
  });
}

tmuxTest(
  "the limit menu's words above an input box that holds a draft: no key at all, not even Enter",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const menu = [
      "  What do you want to do?",
      "  ❯ 1. Stop and wait for limit to reset",
      "    2. Upgrade your plan",
      "  Enter to confirm · Esc to cancel",
    ];
    const draft = "npm version major && npm publish";
    const inline = await tmux.addAgent(agentScreen({
      conversation: ["❯ say hi", bannerLine(reset, "session"), ...menu],
      input: draft,
    }));
    const quoted = await tmux.addAgent(limited(reset, {
      above: ["❯ what does the limit menu say?", "● It asks:", ...menu],
      input: draft,
    }));
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    await run.watcher.scan();
    assert.equal(await tmux.typed(inline), "");
    assert.equal(await tmux.typed(quoted), "");
    assert.match(run.about(inline).at(-1)!.reason, /the limit menu's words above an input box/);
    assert.match(run.about(quoted).at(-1)!.reason, /the input box holds text/);
  },
);

tmuxTest(
  "a menu quoted in an earlier reply is history: an empty input box under it is resumed",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(
      limited(reset, {
        above: [
          "❯ what will the tool ask?",
          '● It asks "Reset all data? [y/N]", then "Do you want to merge it?", then',
          "  What do you want to do?",
          "  ❯ 1. Stop and wait for limit to reset",
        ],
      }),
      { afterEnter: WORKING },
    );
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue\r");
  },
);

tmuxTest(
  "a draft of several lines, one of them a rule, is a draft: nothing typed",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const rule = "─".repeat(160);
    const screen = [
      "❯ go on",
      bannerLine(reset),
      ...Array(40).fill(""),
      rule,
      "❯\u00a0after the limit: tag v2 and publish it to npm, then email the list:",
      "  ──────────",
      "  >",
      rule,
      "  ⏵⏵ auto mode on (shift+tab to cycle)",
    ].join("\n") + "\n";
    const pane = await tmux.addAgent(screen);
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "");
    assert.match(run.about(pane).at(-1)!.reason, /input box holds text/);
  },
);

tmuxTest(
  "drafts that start like a placeholder are drafts; the client's own placeholders are empty",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const drafts = await Promise.all([
      'Try "make release" on the prod box once the limit resets',
      "Type your message to the team…",
    ].map((input) => tmux.addAgent(limited(reset, { input }))));
    const placeholders = await Promise.all([
      'Try "refactor src/parser.ts"',
      "Resend your message to try again",
    ].map((input) =>
      tmux.addAgent(limited(reset, { input: dim(input) }), { afterEnter: WORKING })
    ));
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    for (const pane of drafts) {
      assert.equal(await tmux.typed(pane), "", pane.id);
      assert.match(run.about(pane).at(-1)!.reason, /the input box holds text/);
    }
    for (const pane of placeholders) assert.equal(await tmux.typed(pane), "continue\r", pane.id);
  },
);

tmuxTest(
  "Backspaces are keys too: with synchronize-panes switched on after the text, none is sent",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    // Wide enough that each half of the split window is 160 columns, as the screens are drawn.
    const agent = await tmux.addAgent(limited(reset), { width: 321 });
    const other = await tmux.splitAgent(agent, "Delete all 3 branches? [y/N] ", {
      command: "node",
    });
    const settings = testSettings({ keyDelayMs: 1500 });
    const run = watchRun(tmux, { clock, settings });
    const scan = run.watcher.scan();
    // The moment the text arrives, the window starts passing keys to every pane.
    const deadline = Date.now() + 10_000;
    while ((await tmux.typed(agent)) === "" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await tmux.run(["set-window-option", "-t", agent.id, "synchronize-panes", "on"]);
    await scan;
    assert.equal(await tmux.typed(other), "", "nothing reached the other pane");
    assert.equal(await tmux.typed(agent), "continue", "the text stays; no Backspace, no Enter");
    const report = run.about(agent).find((e) => e.action === "report")!;
    assert.match(
      report.reason,
      /left the typed "continue" as it is \(the window has synchronize-panes on/,
    );
  },
);

tmuxTest(
  "a limit that keeps coming back after each resume is tried maxAttempts times, then left to the user",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    // Its first line differs from WORKING's, so setScreen waits until it is drawn.
    const again = agentScreen({
      conversation: ["● Picked up where it stopped.", "❯ continue", bannerLine(reset)],
    });
    const pane = await tmux.addAgent(limited(reset), { afterEnter: WORKING });
    const run = watchRun(tmux, { clock });
    for (let cycle = 0; cycle < 6; cycle++) {
      await run.watcher.scan(); // resumes (or waits out the backoff)
      await run.watcher.scan(); // sees it working
      await tmux.setScreen(pane, again); // and the same limit back
      clock.advance(10 * 60_000);
    }
    await run.watcher.scan();
    assert.equal((await tmux.typed(pane)).split("continue\r").length - 1, 3);
    assert.ok(run.about(pane).some((e) => e.action === "report" && e.event === "gave_up"));
    assert.deepEqual(run.notices.map((n) => n.event), ["gave_up"]);
  },
);

tmuxTest(
  "resets that passed together are typed a stagger apart, not all at once",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const panes = [];
    for (let i = 0; i < 3; i++) {
      panes.push(await tmux.addAgent(limited(reset), { afterEnter: WORKING }));
    }
    const run = watchRun(tmux, { clock, settings: testSettings({ staggerMs: 60_000 }) });
    await run.watcher.scan();
    const typedNow = [];
    for (const pane of panes) typedNow.push(await tmux.typed(pane));
    assert.deepEqual(typedNow, ["continue\r", "", ""]);
    clock.advance(61_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(panes[1]!), "continue\r");
    assert.equal(await tmux.typed(panes[2]!), "");
    clock.advance(61_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(panes[2]!), "continue\r");
  },
);

tmuxTest(
  "a status line is the user's: a branch named for a deletion does not stop a resume",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(
      limited(reset, {
        footer: [
          "  [Opus 4.8] │ ~/src/shop │ ⎇ fix/delete-button │ Context 12%",
          "  ⏵⏵ auto mode on (shift+tab to cycle)",
        ],
      }),
      { afterEnter: WORKING },
    );
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue\r");
  },
);

tmuxTest(
  "a menu drawn in a box under the input box is a menu: nothing typed at all",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(limited(reset, {
      footer: ["  ┌────────────┐", "  │ ❯ 1. Yes   │", "  │   2. No    │", "  └────────────┘"],
    }));
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "");
    assert.equal(run.about(pane).at(-1)!.state, "dangerous_prompt");
  },
);

tmuxTest(
  "a limit line in a status line under a newer reply is not a limit",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(agentScreen({
      conversation: ["❯ run the tests", "● Done — all 212 tests pass. I did not push."],
      footer: [`  Session limit reached · resets ${clockTime(reset)}`],
    }));
    const right = await tmux.addAgent(agentScreen({
      conversation: [
        "❯ print the notice",
        "● Here it is:",
        // Right-aligned in the reply, as the client draws its own notices.
        `${" ".repeat(109)}You've hit your 5-hour limit · resets ${clockTime(reset)} (UTC)`,
      ],
    }));
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "");
    assert.equal(run.about(pane).at(-1)!.state, "normal");
    assert.equal(await tmux.typed(right), "");
    assert.equal(run.about(right).at(-1)!.state, "normal");
  },
);

tmuxTest(
  "a limit that resets later today (extra usage) is waited for, not typed into at once",
  async (_dir, tmux) => {
    const now = Date.parse("2026-12-01T11:21:00Z");
    const clock = testClock(now);
    const pane = await tmux.addAgent(agentScreen({
      conversation: ["❯ go on", "  ⎿  You're out of extra usage · resets 8pm (UTC)"],
    }));
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "");
    const said = run.about(pane).at(-1)!;
    assert.equal(said.action, "wait");
    assert.equal(said.reset_at, Date.parse("2026-12-01T20:00:00Z"));
  },
);

tmuxTest(
  "the real 2.1.328 limit menu, on Stop and wait, gets its Enter once the reset passed; then the resume text",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const capture = await Deno.readTextFile(
      `${CORPUS_DIR}/probe/429-oauth-menu-stop-and-wait-080x24.txt`,
    );
    const menu = capture.replaceAll("12:16pm", clockTime(reset));
    const stopped = agentScreen({
      conversation: ["❯ say hi", bannerLine(reset)],
      width: 80,
      height: 24,
    });
    const pane = await tmux.addAgent(menu, { width: 80, height: 24, afterEnter: stopped });
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "\r", "Enter alone, on the menu");
    await Deno.writeTextFile(
      `${pane.screenFile}.after-enter`,
      agentScreen({ conversation: ["❯ continue", "✻ Working… (esc to interrupt)"], width: 80 }),
    );
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "\rcontinue\r");
  },
);

tmuxTest(
  "a server that stops in the middle of a scan is waited for, not a crash",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    await tmux.addAgent(limited(reset));
    const real = tmuxClient({ socketName: tmux.socket });
    const watcher = new Watcher({
      ...watchRun(tmux, { clock }).deps,
      tmux: {
        ...real,
        async listPanes(target) {
          await tmux.run(["kill-server"]).catch(() => {});
          return await real.listPanes(target);
        },
      },
    }, testSettings());
    await assert.rejects(() => watcher.scan(), ServerDownError);
  },
);

Deno.test("a saved pane record that does not validate is dropped alone; the others are kept", async () => {
  const good: PaneRecord = {
    ...newRecord("%1", "s", "1:2"),
    state: "usage_limit",
    signal: "screen",
    first_seen_at: 1,
    reset_at: 2,
    resume_at: 3,
  };
  const state = await watchStateCodec.parse(JSON.stringify({
    version: 2,
    server: { socket: "/tmp/tmux-0/x", pid: 7 },
    panes: {
      "%1": good,
      "%2": { ...good, pane: "%2", tried: null },
      "%3": { ...good, pane: "%3", attempts: "many" },
      "%4": { ...good, pane: "%5" },
    },
  }));
  assert.deepEqual(Object.keys(state.panes), ["%1"]);
});

tmuxTest(
  "a saved record that says to resume before the reset is not believed",
  async (_dir, tmux) => {
    const reset = Math.floor(Date.now() / 60_000) * 60_000 + 30 * 60_000;
    const clock = testClock(Date.now());
    const pane = await tmux.addAgent(limited(reset));
    const first = watchRun(tmux, { clock });
    await first.watcher.scan();
    const saved = Object.fromEntries(first.watcher.records);
    saved[pane.id] = { ...saved[pane.id]!, resume_at: 0, episode: "not json" };
    const run = watchRun(tmux, { clock, saved });
    await run.watcher.scan();
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "");
    assert.match(run.about(pane).at(-1)!.reason, /^limited until .*; resume at /);
  },
);

/** Registers a session in `root` that names `pane`, with an old StopFailure and no transcript. */
async function staleRecords(
  tmux: TmuxHarness,
  pane: AgentPane,
  root: string,
  { agentPid }: { agentPid: "none" | "pane" },
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
      transcript_path: null,
      tmux_pane: pane.id,
      tmux_socket: await tmux.socketPath(),
      agent_pid: agentPid === "none" ? null : pid,
      agent_command: "claude",
      first_seen: "2026-12-01T10:00:00.000Z",
      last_seen: "2026-12-01T10:00:00.000Z",
      last_event: "PostToolUse",
    }),
  );
  await Deno.writeTextFile(
    `${dir}/stop-failure.json`,
    JSON.stringify({
      ts: new Date(Date.now() - 3600_000).toISOString(),
      error: "rate_limit",
      message: `You've hit your 5-hour limit · resets ${clockTime(Date.now() - 1800_000)} (UTC)`,
    }),
  );
}

for (const agentPid of ["none", "pane"] as const) {
  tmuxTest(
    `records alone (agent pid: ${agentPid}, no transcript) under a fresh reply: nothing typed`,
    async (dir, tmux) => {
      const root = `${dir}/project-${agentPid}`;
      const pane = await tmux.addAgent(agentScreen({
        conversation: ["❯ run the tests", "● Done — all 212 tests pass. I did not push."],
      }));
      await staleRecords(tmux, pane, root, { agentPid });
      const run = watchRun(tmux, { roots: [root] });
      await run.watcher.scan();
      await run.watcher.scan();
      assert.equal(await tmux.typed(pane), "");
      assert.equal(run.about(pane).at(-1)!.state, "normal");
    },
  );
}

// The second red-team run: real client renders, a placeholder-shaped draft, vim, a failing API.

const corpus = (name: string) => Deno.readTextFile(`${CORPUS_DIR}/probe/${name}`);

tmuxTest(
  "a limit banner inside a box or table of a reply is quoted text: the idle agent is left alone",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    // The real client's render of a reply holding a markdown table (80x24), and a one-cell box.
    const table = await tmux.addAgent(await corpus("assistant-table-with-banner-080x24.txt"), {
      width: 80,
      height: 24,
    });
    const box = await tmux.addAgent(agentScreen({
      conversation: [
        "❯ which banner did you see in the CI log?",
        "● This one, from the nightly job:",
        "  ┌────────────────────────────────────────────────────┐",
        `  │ You've hit your 5-hour limit · resets ${clockTime(reset)} (UTC) │`,
        "  └────────────────────────────────────────────────────┘",
        "  It came from the bot's own account, not yours.",
        "✻ Churned for 2s",
      ],
    }));
    // The table's banner reset at 11:53am UTC: a clock just after it, and one much later.
    const run = watchRun(tmux, { clock });
    for (let i = 0; i < 2; i++) await run.watcher.scan();
    clock.advance(3 * 3600_000);
    await run.watcher.scan();
    for (const pane of [table, box]) {
      assert.equal(await tmux.typed(pane), "", pane.id);
      assert.ok(run.about(pane).every((e) => e.state === "normal"), pane.id);
    }
  },
);

tmuxTest(
  "a draft that reads word for word like a placeholder, but in full colour, is a draft",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const words = ['Try "fix lint errors"', "Resend your message to try again"];
    const drafts = await Promise.all(
      words.map((input) => tmux.addAgent(limited(reset, { input }))),
    );
    const placeholders = await Promise.all(
      words.map((input) =>
        tmux.addAgent(limited(reset, { input: dim(input) }), { afterEnter: WORKING })
      ),
    );
    const run = watchRun(tmux, { clock });
    await run.watcher.scan();
    for (const [i, pane] of drafts.entries()) {
      assert.equal(await tmux.typed(pane), "", pane.id);
      assert.equal(
        run.about(pane).at(-1)!.reason,
        `the input box holds ${JSON.stringify(words[i])} in full colour: a draft that reads ` +
          "like a placeholder, not one",
      );
    }
    for (const pane of placeholders) assert.equal(await tmux.typed(pane), "continue\r", pane.id);
  },
);

tmuxTest(
  "vim editing: typed only in INSERT mode; in NORMAL mode the keys would be commands",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    // NORMAL mode draws no indicator at all (the real client, editorMode vim, after Esc).
    const normal = await tmux.addAgent(limited(reset));
    const insert = await tmux.addAgent(
      limited(reset, { footer: ["  -- INSERT -- ⏵⏵ auto mode on (shift+tab to cycle)"] }),
      { afterEnter: WORKING },
    );
    const run = watchRun(tmux, { clock, vim: true });
    await run.watcher.scan();
    assert.equal(await tmux.typed(normal), "");
    assert.match(run.about(normal).at(-1)!.reason, /vim/);
    assert.equal(await tmux.typed(insert), "continue\r");
  },
);

tmuxTest(
  "an API that keeps failing is resumed at most foregroundMax times, backing off, then reported",
  async (_dir, tmux) => {
    // The real client's final 529 after a resume: idle, placeholder "Resend your message…".
    const placeholder = "Resend your message to try again";
    const failed = (await corpus("529-final-after-continue-080x24.txt"))
      .replace(`❯\u00a0${placeholder}`, `❯\u00a0${dim(placeholder)}`);
    const pane = await tmux.addAgent(failed, { width: 80, height: 24, afterEnter: WORKING });
    const clock = testClock(Date.now());
    const run = watchRun(tmux, { clock });
    const enters = async () => (await tmux.typed(pane)).split("\r").length - 1;
    const at: number[] = [];
    for (let round = 0; round < 12 && !run.notices.length; round++) {
      await run.watcher.scan();
      if ((await enters()) > at.length) {
        at.push(clock.now());
        // The agent worked a moment (too short for a scan to see), then the API failed again
        // with the same error.
        await tmux.setScreen(pane, failed);
        await tmux.waitForScreen(pane, "Resend your message");
      }
      clock.advance(5 * 60_000);
    }
    assert.equal(at.length, 3, "three resumes (retry.foregroundMax), then none");
    assert.ok(at.every((t, i) => i === 0 || t - at[i - 1]! >= 120_000), "backed off each time");
    assert.equal(run.events.filter((e) => e.action === "report").length, 1);
    assert.match(run.events.find((e) => e.action === "report")!.reason, /again after 3 resumes/);
    for (let i = 0; i < 2; i++) {
      clock.advance(30 * 60_000);
      await run.watcher.scan();
    }
    assert.equal(await enters(), 3, "nothing more once reported");
  },
);

// The third red-team run: a stop request (SIGTERM) or a mode in the middle of a resume.

/** Waits until the pane has received `text` (in all), or fails after 10 s. */
async function until(tmux: TmuxHarness, pane: AgentPane, text: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await tmux.typed(pane)).includes(text)) {
    if (Date.now() > deadline) throw new Error(`${pane.id} never received ${JSON.stringify(text)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

tmuxTest(
  "told to stop between the text and Enter: no Enter, the text taken back at once",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(limited(reset));
    let stop = false;
    const settings = testSettings({ keyDelayMs: 6000 });
    const run = watchRun(tmux, { clock, settings, stopping: () => stop });
    const started = Date.now();
    const scan = run.watcher.scan();
    await until(tmux, pane, "continue");
    stop = true;
    await scan;
    assert.ok(Date.now() - started < 5000, "well before the 6 s key delay ran out");
    assert.equal(await tmux.typed(pane), "continue" + "\x7f".repeat(8), "Backspaces, no Enter");
    assert.match(
      run.about(pane).at(-1)!.reason,
      /then the watcher was told to stop before Enter: no Enter; took the typed text back/,
    );
    // Nothing new starts once told to stop.
    clock.advance(3600_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue" + "\x7f".repeat(8));
  },
);

tmuxTest(
  "told to stop while checking a resume: the check ends at once, and the attempt is counted",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(limited(reset)); // the screen stays as it is after Enter
    let stop = false;
    let captures = 0;
    const settings = testSettings({ verifyDelayMs: 15_000 });
    const run = watchRun(tmux, { clock, settings, stopping: () => stop });
    const real = run.deps.tmux;
    const watcher = new Watcher({
      ...run.deps,
      tmux: { ...real, capture: (id) => (captures++, real.capture(id)) },
    }, settings);
    const scan = watcher.scan();
    await until(tmux, pane, "\r");
    const stoppedAt = Date.now();
    stop = true;
    captures = 0;
    await scan;
    assert.ok(Date.now() - stoppedAt < 2000, "not the 15 s check");
    assert.ok(captures <= 3, `${captures} captures after the stop: no busy loop`);
    const record = watcher.records.get(pane.id)!;
    assert.equal(record.attempts, 1);
    assert.ok(record.resume_at! > clock.now(), "the next try waits for its backoff");
    assert.match(record.reason, /told to stop before it could tell/);
  },
);

tmuxTest(
  "its own text left in the box (copy mode came up while typing) is never Backspaced later: it says so",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(limited(reset), { afterEnter: WORKING });
    const settings = testSettings({ keyDelayMs: 1500 });
    const run = watchRun(tmux, { clock, settings });
    const scan = run.watcher.scan();
    await until(tmux, pane, "continue");
    await tmux.run(["copy-mode", "-t", pane.id]);
    await scan;
    assert.match(run.about(pane).at(-1)!.reason, /left the typed "continue" as it is/);
    await tmux.run(["send-keys", "-t", pane.id, "-X", "cancel"]);
    // The box reads "continue": lifeline's, or the user's typed since (a screen cannot tell).
    clock.advance(10 * 60_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue", "no Backspace, no Enter");
    assert.match(
      run.about(pane).at(-1)!.reason,
      /the input box holds "continue", which lifeline typed and had to leave there .*: clear it, or press Enter yourself/,
    );
    // The user clears it: the next resume goes ahead.
    await tmux.run(["send-keys", "-t", pane.id, "-N", "8", "BSpace"]);
    await tmux.waitForScreen(pane, "❯\u00a0\n");
    clock.advance(10 * 60_000);
    await run.watcher.scan();
    assert.equal(await tmux.typed(pane), "continue" + "\x7f".repeat(8) + "continue\r");
  },
);

tmuxTest(
  "told to stop during the last look before Enter: still no Enter",
  async (_dir, tmux) => {
    const { reset, clock } = passed();
    const pane = await tmux.addAgent(limited(reset));
    let stop = false;
    let looks = 0;
    const run = watchRun(tmux, { clock, stopping: () => stop });
    const real = run.deps.tmux;
    // The second look at the pane is the one before Enter: the stop request comes during it.
    const watcher = new Watcher({
      ...run.deps,
      tmux: { ...real, paneInfo: (id) => (++looks === 2 && (stop = true), real.paneInfo(id)) },
    }, testSettings());
    await watcher.scan();
    assert.ok(stop, "the stop came during the last look");
    assert.equal(await tmux.typed(pane), "continue" + "\x7f".repeat(8));
  },
);
