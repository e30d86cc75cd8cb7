// `lifeline watch tmux` against real tmux servers (one per test, never the default one) with
// fake agents that draw real screens and record every byte they receive.
import assert from "node:assert/strict";
import { screen } from "./helpers/fixtures.ts";
import { runLifeline, spawnLifeline } from "./helpers/lifeline.ts";
import { agentScreen, clockTime, dialogScreen, monthDay } from "./helpers/screens.ts";
import { type AgentPane, type TmuxHarness, withTmux } from "./helpers/tmux_harness.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";

/** A test with its own temporary directory and its own tmux server. */
function tmuxTest(name: string, fn: (dir: string, tmux: TmuxHarness) => Promise<void>): void {
  Deno.test({
    name,
    ignore: IGNORE,
    fn: () => withTempDir((dir) => withTmux(dir, (tmux) => fn(dir, tmux))),
  });
}

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
        verifyDelaySeconds: 0.5,
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
  reset_at: string | null;
  action: string;
  reason: string;
}

async function watchOnce(tmux: TmuxHarness, dir: string, extra: string[] = []): Promise<Line[]> {
  const result = await runLifeline(
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
    { env: { HOME: `${dir}/home`, TZ: "UTC" }, timeoutMs: 90_000 },
  );
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

const typed = async (tmux: TmuxHarness, pane: AgentPane) =>
  (await tmux.received(pane)).map((r) => r.text);

/** A busy screen: what the agent shows once it picked up the resume. */
const WORKING = agentScreen({
  conversation: ["❯ continue", "✻ Working… (1s · esc to interrupt)"],
  footer: ["  esc to interrupt"],
});

/** The banner wordings of reference §4a, each with a reset that has just passed. */
function justPassedWordings(now: number): [string, string[]][] {
  const time = clockTime(now);
  const ny = clockTime(now, "America/New_York");
  const la = clockTime(now, "America/Los_Angeles");
  const rome = clockTime(now, "Europe/Rome");
  const date = monthDay(now);
  const line = (text: string) => ["❯ go on", `  ⎿  ${text}`];
  return [
    ["5-hour", line(`You've hit your 5-hour limit · resets ${ny} (America/New_York)`)],
    ["weekly", line(`You've hit your weekly limit · resets ${date}, ${time} (UTC)`)],
    ["Opus", line(`You've hit your Opus limit · resets ${date}, ${time} (UTC)`)],
    ["Sonnet", line(`You've hit your Sonnet limit · resets ${date}, ${time}`)],
    ["Fable", line(`You've hit your Fable limit · resets ${date}, ${time}`)],
    ["usage credit", line(`You've hit your usage credit limit · resets ${date}, ${time}`)],
    ["progress saved", line(`You've hit your 5-hour limit · resets ${time} · progress saved`)],
    ["session", line(`You've hit your session limit · resets ${la} (America/Los_Angeles)`)],
    ["limit", line(`You've hit your limit · resets ${rome} (Europe/Rome)`)],
    ["weekly reached", line(`Weekly limit reached ∙ resets ${date}, ${time}`)],
    ["5-hour reached", line(`5-hour limit reached ∙ resets ${time}`)],
    ["out of credits", line(`You're out of usage credits · resets ${date}, ${time}`)],
    ["raw epoch", line(`Claude AI usage limit reached|${Math.floor(now / 1000) - 5}`)],
    ["TUI", ["> go on", `  Claude usage limit reached. Your limit will reset at ${time} (UTC).`]],
  ];
}

tmuxTest(
  "every §4a wording is resumed once its reset has passed: text, then Enter on its own",
  async (dir, tmux) => {
    await project(dir);
    // A minute boundary would make "the current minute" ambiguous: start well inside one.
    if (new Date().getUTCSeconds() > 45) await new Promise((r) => setTimeout(r, 16_000));
    const panes: [string, AgentPane][] = [];
    for (const [name, conversation] of justPassedWordings(Date.now())) {
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
      const verified = lines.find((l) => l.pane === pane.id && l.reason.startsWith("verified"));
      assert.ok(verified, `${name}: the resume was verified`);
    }
  },
);

tmuxTest("a reset in the future is waited for; nothing is typed before it", async (dir, tmux) => {
  await project(dir);
  const resetAt = Math.floor(Date.now() / 1000) + 4;
  const pane = await tmux.addAgent(
    agentScreen({
      conversation: ["> go on", `  ⎿  Claude AI usage limit reached|${resetAt}`],
    }),
    { afterEnter: WORKING },
  );
  const first = await watchOnce(tmux, dir);
  assert.deepEqual(first.map((l) => [l.state, l.action]), [["usage_limit", "wait"]]);
  assert.equal(first[0]!.reset_at, new Date(resetAt * 1000).toISOString());
  assert.deepEqual(await typed(tmux, pane), []);
  await new Promise((r) => setTimeout(r, Math.max(0, resetAt * 1000 - Date.now()) + 300));
  const second = await watchOnce(tmux, dir);
  assert.ok(second.some((l) => l.action === "resume"));
  assert.deepEqual(await typed(tmux, pane), ["continue", "\r"]);
});

tmuxTest(
  "a prompt that replaces the banner between detection and typing is refused",
  async (dir, tmux) => {
    await project(dir, { verifyDelaySeconds: 2 });
    const banner = agentScreen({
      conversation: [
        "❯ go on",
        `  ⎿  You've hit your 5-hour limit · resets ${clockTime(Date.now())} (UTC)`,
      ],
    });
    const first = await tmux.addAgent(banner, { afterEnter: WORKING });
    const second = await tmux.addAgent(banner);
    const third = await tmux.addAgent(banner);
    const watcher = watchOnce(tmux, dir);
    // The first pane is resumed first; while the watcher checks on it, the others change.
    while ((await tmux.received(first)).length < 2) await new Promise((r) => setTimeout(r, 20));
    await tmux.setScreen(
      second,
      dialogScreen(["❯ go on"], [
        " Bash command",
        " git push --force origin main",
        " Do you want to proceed?",
        " ❯ 1. Yes",
        "   2. No",
      ]),
    );
    await tmux.setScreen(
      third,
      agentScreen({
        conversation: [
          "❯ go on",
          "● Running the cleanup script",
          "  rm: remove 3 files? [y/N]",
        ],
      }),
    );
    const lines = await watcher;
    assert.deepEqual(await typed(tmux, second), []);
    assert.deepEqual(await typed(tmux, third), []);
    const refusals = lines.filter((l) => l.action === "refuse");
    assert.deepEqual(refusals.map((l) => l.pane).sort(), [second.id, third.id].sort());
    assert.match(
      refusals.find((l) => l.pane === second.id)!.reason,
      /permission question|Do you want/,
    );
    assert.match(refusals.find((l) => l.pane === third.id)!.reason, /\[y\/N\]/);
    const log = await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`);
    assert.match(log, /"action":"refuse"/);
    // Not tried again while the screen stays the same.
    const again = await watchOnce(tmux, dir);
    assert.ok(again.every((l) => l.action !== "refuse" && l.action !== "resume"));
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
    for (const [name, text] of Object.entries(cases)) {
      panes.set(name, await tmux.addAgent(text));
    }
    const safe = await tmux.addAgent(menu("Stop and wait for limit to reset"));
    const lines = await watchOnce(tmux, dir);
    for (const [name, pane] of panes) {
      assert.deepEqual(await typed(tmux, pane), [], name);
    }
    const state = (pane: AgentPane) => lines.find((l) => l.pane === pane.id)?.state;
    assert.equal(state(panes.get("native")!), "native_autocontinue");
    assert.equal(state(panes.get("retrying")!), "busy");
    assert.equal(state(panes.get("unsafe menu")!), "limit_menu");
    assert.equal(state(panes.get("permission")!), "dangerous_prompt");
    assert.equal(state(panes.get("trust")!), "dangerous_prompt");
    assert.deepEqual(await typed(tmux, safe), ["\r"], "the safe menu choice gets Enter alone");
  },
);

tmuxTest(
  "panes of other programs are not watched; a pane that now runs another program is refused",
  async (dir, tmux) => {
    await project(dir);
    const banner = agentScreen({
      conversation: [
        "❯ go on",
        `  ⎿  You've hit your 5-hour limit · resets ${clockTime(Date.now())} (UTC)`,
      ],
    });
    const editor = await tmux.addAgent(banner, { command: "vim" });
    const lines = await watchOnce(tmux, dir);
    assert.ok(lines.every((l) => l.pane !== editor.id));
    // With --target it is looked at, but never typed into: it is not the agent.
    const targeted = await watchOnce(tmux, dir, ["--target", editor.id]);
    assert.equal(targeted.find((l) => l.action === "refuse")?.reason, "the pane now runs vim");
    assert.deepEqual(await typed(tmux, editor), []);
  },
);

tmuxTest(
  "two panes with the same reset are resumed staggered, each exactly once",
  async (dir, tmux) => {
    await project(dir, { staggerSeconds: 2, verifyDelaySeconds: 0.3 });
    const resetAt = Math.floor(Date.now() / 1000) + 2;
    const banner = agentScreen({
      conversation: ["> go on", `  ⎿  Claude AI usage limit reached|${resetAt}`],
    });
    const a = await tmux.addAgent(banner, { afterEnter: WORKING });
    const b = await tmux.addAgent(banner, { afterEnter: WORKING });
    const watcher = spawnLifeline(
      [
        "watch",
        "tmux",
        "--socket",
        tmux.socket,
        "--interval",
        "1",
        "--json",
        "--root",
        `${dir}/project`,
      ],
      { env: { HOME: `${dir}/home`, TZ: "UTC" } },
    );
    await new Promise((r) => setTimeout(r, 9000));
    watcher.kill("SIGTERM");
    const status = await watcher.status;
    await watcher.stdout.cancel();
    await watcher.stderr.cancel();
    assert.equal(status.code, 0, "SIGTERM stops it cleanly");
    const ra = await tmux.received(a);
    const rb = await tmux.received(b);
    assert.deepEqual(ra.map((r) => r.text), ["continue", "\r"]);
    assert.deepEqual(rb.map((r) => r.text), ["continue", "\r"]);
    const gap = Math.abs(ra[0]!.at - rb[0]!.at);
    assert.ok(gap >= 1900, `resumes ${gap} ms apart`);
  },
);

tmuxTest(
  "one watcher per tmux server: the second says who runs; after kill -9 the next takes over",
  async (dir, tmux) => {
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
    const env = { HOME: `${dir}/home` };
    const first = spawnLifeline(args, { env });
    const second = spawnLifeline(args, { env });
    const outcome = await Promise.race([
      first.status.then((s) => ({ loser: first, winner: second, status: s })),
      second.status.then((s) => ({ loser: second, winner: first, status: s })),
    ]);
    assert.equal(outcome.status.code, 1);
    const stderr = new TextDecoder().decode((await outcome.loser.output()).stderr);
    assert.match(stderr, new RegExp(`already running \\(pid ${outcome.winner.pid}\\)`));
    outcome.winner.kill("SIGKILL");
    await outcome.winner.status;
    await outcome.winner.stdout.cancel();
    await outcome.winner.stderr.cancel();
    const next = spawnLifeline(args, { env });
    const reader = next.stdout.getReader();
    const { value } = await reader.read(); // it scans at once: it holds the lock
    assert.match(new TextDecoder().decode(value), /normal: none/);
    reader.releaseLock();
    next.kill("SIGTERM");
    assert.equal((await next.status).code, 0);
    await next.stdout.cancel();
    await next.stderr.cancel();
  },
);

tmuxTest(
  "a corrupt watcher state is moved aside, and the watcher starts afresh",
  async (dir, tmux) => {
    await project(dir);
    const resetAt = Math.floor(Date.now() / 1000) + 3600;
    await tmux.addAgent(agentScreen({
      conversation: ["> go on", `  ⎿  Claude AI usage limit reached|${resetAt}`],
    }));
    const stateDir = `${dir}/home/.local/state/lifeline/watch`;
    await Deno.mkdir(stateDir, { recursive: true });
    const state = `${stateDir}/L-${tmux.socket}.json`;
    await Deno.writeTextFile(state, '{"panes": {"%0": {"pane": "%0", "stat');
    const lines = await watchOnce(tmux, dir);
    assert.deepEqual(lines.map((l) => [l.state, l.action]), [["usage_limit", "wait"]]);
    const names = await listDir(stateDir);
    const moved = names.filter((n) => n.startsWith(`L-${tmux.socket}.json.corrupt-`));
    assert.equal(moved.length, 1, names.join(", "));
    assert.equal(
      await Deno.readTextFile(`${stateDir}/${moved[0]}`),
      '{"panes": {"%0": {"pane": "%0", "stat',
    );
    const saved = JSON.parse(await Deno.readTextFile(state));
    assert.equal(saved.panes["%0"].reset_at, resetAt * 1000);
  },
);

tmuxTest(
  "a failed resume is retried later, not at once, even by a restarted watcher",
  async (dir, tmux) => {
    await project(dir);
    // The agent ignores the resume: the banner stays.
    const pane = await tmux.addAgent(agentScreen({
      conversation: [
        "❯ go on",
        `  ⎿  You've hit your 5-hour limit · resets ${clockTime(Date.now())} (UTC)`,
      ],
    }));
    const first = await watchOnce(tmux, dir);
    assert.match(first.at(-1)!.reason, /did not work .* attempt 1\/3, next at/);
    const second = await watchOnce(tmux, dir);
    assert.deepEqual(second.map((l) => l.action), ["wait"]);
    assert.deepEqual(await typed(tmux, pane), ["continue", "\r"]);
  },
);

tmuxTest("--dry-run decides but types nothing", async (dir, tmux) => {
  await project(dir);
  const pane = await tmux.addAgent(agentScreen({
    conversation: [
      "❯ go on",
      `  ⎿  You've hit your 5-hour limit · resets ${clockTime(Date.now())} (UTC)`,
    ],
  }));
  const lines = await watchOnce(tmux, dir, ["--dry-run"]);
  assert.ok(
    lines.some((l) => l.action === "resume" && /dry run: would type "continue"/.test(l.reason)),
  );
  assert.deepEqual(await typed(tmux, pane), []);
});
