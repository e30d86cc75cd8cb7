import assert from "node:assert/strict";
import {
  lastLinesRefusal,
  type PaneState,
  parseScreen,
  placeholderIsDim,
  readScreen,
} from "../lib/claude/screen.ts";
import { CORPUS_DIR } from "./helpers/corpus.ts";
import { FIXTURE_DIR, screen } from "./helpers/fixtures.ts";
import { agentScreen, dialogScreen } from "./helpers/screens.ts";

/** Every captured screen of the real client, and what it must be read as. */
const FIXTURE_STATES: Record<string, PaneState> = {
  "screen-429-90-final": "transient_api_error",
  "screen-429-plain-90-final": "transient_api_error",
  "screen-500-90-final": "transient_api_error",
  "screen-529-90-final": "transient_api_error",
  "screen-429-oauth-90-final": "native_autocontinue",
  "screen-429-oauth-91-after-esc": "usage_limit",
  "screen-hook-block-01-after-prompt": "normal",
  "screen-hook-errors-01-after-prompt": "normal",
  "screen-permission-01-permission-prompt": "dangerous_prompt",
  "screen-permission-04-after-answer": "normal",
  "screen-permission-auto-01-auto-mode-cant-check": "dangerous_prompt",
  "screen-permission-auto-02-permission-prompt": "dangerous_prompt",
  "screen-permission-yes-04-after-answer": "normal",
  "screen-trust-01-trust-dialog": "dangerous_prompt",
  "screen-trust-04-reply": "normal",
  "screen-trust-no-02-after-no": "dangerous_prompt",
  "screen-unseeded-01-start": "permanent",
};

Deno.test("every real 2.1.328 screen is classified", async () => {
  const names: string[] = [];
  for await (const entry of Deno.readDir(`${FIXTURE_DIR}/screens`)) {
    if (!entry.name.includes("retry-series")) names.push(entry.name.replace(/\.txt$/, ""));
  }
  assert.deepEqual(names.sort(), Object.keys(FIXTURE_STATES).sort(), "a fixture without a row");
  for (const [name, state] of Object.entries(FIXTURE_STATES)) {
    assert.equal(readScreen(await screen(name)).state, state, name);
  }
});

Deno.test("retry series: busy while the client retries, resumable once it gives up", async () => {
  for (const name of ["429", "429-plain", "500", "529"]) {
    const sections = (await screen(`screen-${name}-retry-series`)).split(/^=====.*$/m)
      .filter((s) => s.trim());
    const states = sections.map((s) => readScreen(s).state);
    assert.ok(states.slice(0, -1).every((s) => s === "busy"), `${name}: ${states}`);
    assert.equal(states.at(-1), "transient_api_error", name);
  }
  const oauth = (await screen("screen-429-oauth-retry-series")).split(/^=====.*$/m)[1]!;
  assert.equal(readScreen(oauth).state, "native_autocontinue");
});

Deno.test("the real banners: reset, kind, idle prompt, and how to resume", async () => {
  const limited = readScreen(await screen("screen-429-oauth-91-after-esc"));
  assert.equal(limited.idle, true);
  assert.equal(limited.keys, "text");
  assert.equal(limited.limitKind, "5-hour");
  assert.match(limited.resetText!, /resets 5:54pm \(UTC\)/);
  const native = readScreen(await screen("screen-429-oauth-90-final"));
  assert.equal(native.resetText, "resets 5:54pm (UTC)", "the banner's reset, with its zone");
  const final = readScreen(await screen("screen-529-90-final"));
  assert.equal(final.idle, true, "the placeholder is an empty prompt");
  assert.equal(final.rule, "529 overloaded");
});

Deno.test("the input box, the footer and the conversation of a real screen", async () => {
  const parsed = parseScreen(await screen("screen-429-oauth-91-after-esc"));
  assert.equal(parsed.input, "");
  assert.deepEqual(parsed.footer, ["  ⏵⏵ auto mode on (shift+tab to cycle)"]);
  assert.ok(parsed.conversation.some((line) => line.includes("You've hit your 5-hour limit")));
  assert.equal(
    parseScreen(await screen("screen-hook-block-01-after-prompt")).input,
    "probe prompt for hook-block",
  );
  assert.equal(parseScreen(await screen("screen-permission-01-permission-prompt")).input, null);
});

/** Every wording of reference §4a, new and old, as a banner under a prompt. */
export const WORDINGS: [string, string[]][] = [
  ["5-hour (2.1.328)", [
    "❯ go on",
    "  ⎿  You've hit your 5-hour limit · resets 3pm (America/New_York)",
  ]],
  ["weekly", [
    "❯ go on",
    "  ⎿  You've hit your weekly limit · resets Nov 20, 3pm (America/New_York)",
  ]],
  ["Opus", ["❯ go on", "  ⎿  You've hit your Opus limit · resets 3:30pm (UTC)"]],
  ["Sonnet", ["❯ go on", "  ⎿  You've hit your Sonnet limit · resets 3:30pm"]],
  ["Fable", ["❯ go on", "  ⎿  You've hit your Fable limit · resets 3:30pm"]],
  ["usage credit", ["❯ go on", "  ⎿  You've hit your usage credit limit · resets 3:30pm"]],
  ["progress saved", [
    "❯ go on",
    "  ⎿  You've hit your 5-hour limit · resets 3pm · progress saved",
  ]],
  ["session (2.1.201)", [
    "❯ go on",
    "  ⎿  You've hit your session limit · resets 12:50am (America/Los_Angeles)",
  ]],
  ["limit (2.1.92)", ["❯ go on", "  ⎿  You've hit your limit · resets 4:50am (Europe/Rome)"]],
  ["weekly reached (2.0)", ["> go on", "  ⎿  Weekly limit reached ∙ resets 7pm"]],
  ["5-hour reached (2.0)", ["> go on", "  ⎿  5-hour limit reached ∙ resets 3pm"]],
  ["out of credits", ["❯ go on", "  ⎿  You're out of usage credits · resets 3pm"]],
  ["raw epoch (1.0)", ["> go on", "  ⎿  Claude AI usage limit reached|1750708800"]],
  ["TUI (1.0)", [
    "> go on",
    "  Claude usage limit reached. Your limit will reset at 3pm (America/Bogota).",
  ]],
];

Deno.test("every wording of reference §4a is a usage limit", () => {
  for (const [name, conversation] of WORDINGS) {
    const c = readScreen(agentScreen({ conversation }));
    assert.equal(c.state, "usage_limit", name);
    assert.equal(c.idle, true, name);
    assert.ok(c.resetText, name);
  }
  assert.equal(readScreen(agentScreen({ conversation: WORDINGS[1]![1] })).limitKind, "weekly");
});

Deno.test("false positives are normal", () => {
  const cases: [string, string[]][] = [
    ["quoted by the agent", [
      "❯ what did the error say?",
      '● The banner said "You\'ve hit your 5-hour limit · resets 3pm", so I waited.',
    ]],
    ["a package called ratelimit", [
      "● Added @upstash/ratelimit to package.json; rate limit resets are handled by it.",
    ]],
    ["a log line", [
      "  ⎿  2026-11-30 12:00:01 WARN ratelimit: 429 too many requests, usage limit resets 3pm",
    ]],
    ["not your usage limit", [
      "● API Error: Server is temporarily limiting requests (not your usage limit) · retry shortly",
      "● I'll try again.",
    ]],
    ["fenced", [
      "● Here is the text:",
      "  ```",
      "  You've hit your 5-hour limit · resets 3pm",
      "  ```",
    ]],
    ["quoted block", ["  > You've hit your 5-hour limit · resets 3pm"]],
    ["old banner, newer conversation below", [
      "❯ go on",
      "  ⎿  You've hit your 5-hour limit · resets 3pm (UTC)",
      "❯ continue",
      "● Picking up where I left off: running the tests.",
      "  ⎿  42 passed",
    ]],
    ["a limit line with no reset", [
      "● Usage limit reached for the day on the build server; moving on.",
    ]],
  ];
  for (const [name, conversation] of cases) {
    const state = readScreen(agentScreen({ conversation })).state;
    assert.notEqual(state, "usage_limit", name);
    assert.notEqual(state, "native_autocontinue", name);
  }
});

Deno.test("busy and prompts win over a banner", () => {
  const banner = ["❯ go on", "  ⎿  You've hit your 5-hour limit · resets 3pm (UTC)"];
  assert.equal(
    readScreen(agentScreen({ conversation: [...banner, "✻ Working… (3s · esc to interrupt)"] }))
      .state,
    "busy",
  );
  assert.equal(
    readScreen(agentScreen({ conversation: banner, footer: ["  esc to interrupt"] })).state,
    "busy",
  );
  const prompt = dialogScreen(banner, [
    " Bash command",
    " git push --force origin main",
    " Do you want to proceed?",
    " ❯ 1. Yes",
    "   2. No",
  ]);
  assert.equal(readScreen(prompt).state, "dangerous_prompt");
  assert.equal(
    readScreen(agentScreen({ conversation: [...banner, "  Overwrite file? [y/N]"] })).state,
    "dangerous_prompt",
  );
});

Deno.test("the limit menu: only its safe choice may get an Enter", () => {
  const menu = (pointer: number) =>
    dialogScreen(["❯ go on", "  ⎿  You've hit your 5-hour limit · resets 3pm (UTC)"], [
      " What do you want to do?",
      ...["Stop and wait for limit to reset", "Upgrade your plan", "Switch to usage credits"].map(
        (option, i) => `${i === pointer ? " ❯" : "  "} ${i + 1}. ${option}`,
      ),
    ]);
  const safe = readScreen(menu(0));
  assert.equal(safe.state, "limit_menu");
  assert.equal(safe.keys, "enter");
  const upgrade = readScreen(menu(1));
  assert.equal(upgrade.state, "limit_menu");
  assert.equal(upgrade.keys, undefined);
  assert.match(upgrade.rule, /Upgrade your plan/);
});

Deno.test("permanent trouble is reported, and a typed draft is not an idle prompt", () => {
  for (
    const line of [
      '● Please run /login · API Error: 401 {"type":"error"}',
      "● Usage is paused for your organization. For help, please contact support.",
      "● API Error: 400 Prompt is too long",
      "● Credit balance is too low",
    ]
  ) {
    assert.equal(
      readScreen(agentScreen({ conversation: ["❯ hi", line] })).state,
      "permanent",
      line,
    );
  }
  const draft = readScreen(agentScreen({
    conversation: ["❯ go on", "  ⎿  You've hit your 5-hour limit · resets 3pm (UTC)"],
    input: "half-typed thought",
  }));
  assert.equal(draft.state, "usage_limit");
  assert.equal(draft.idle, false);
});

Deno.test("Press Enter to retry is resumed with Enter alone", () => {
  const c = readScreen(
    agentScreen({ conversation: ["❯ hi", "● Rate limited. Press Enter to retry"] }),
  );
  assert.equal(c.state, "transient_api_error");
  assert.equal(c.keys, "enter");
});

Deno.test("the last-5-lines rule of spec §5.1 refuses confirmations and destructive words", () => {
  for (
    const line of [
      "Continue? [y/N]",
      "Proceed [Y/n]",
      "[yes/no]",
      "Please confirm",
      "delete 3 files",
      "overwrite x?",
      "git push --force? force push",
    ]
  ) {
    assert.equal(lastLinesRefusal(`a\nb\n${line}\n\n\n`), line, line);
  }
  assert.equal(lastLinesRefusal("one\ntwo\nthree\nfour\nfive\nsix"), undefined);
  assert.equal(lastLinesRefusal("delete me\n1\n2\n3\n4\n5"), undefined, "only the last five count");
});

Deno.test("the client draws a placeholder dim; a draft with the same words is full colour", async () => {
  // Real renders with escapes (capture-pane -e): "Resend your message to try again" as drawn.
  for (const name of ["429-apikey-final-080x24-status", "529-final-200x50"]) {
    const ansi = await Deno.readTextFile(`${CORPUS_DIR}/probe/${name}.ansi`);
    assert.equal(readScreen(ansi).placeholder, "Resend your message to try again", name);
    assert.equal(placeholderIsDim(ansi), true, name);
    // The same words typed by the user: the client draws typed text without SGR 2.
    const typed = ansi.replace(
      // deno-lint-ignore no-control-regex
      /❯\u00a0\x1b\[7mR\x1b\[0;2m\x1b\[39m\x1b\[49mesend/,
      "❯\u00a0\x1b[39mResend",
    );
    assert.notEqual(typed, ansi, name);
    assert.equal(placeholderIsDim(typed), false, name);
  }
  // An empty box (only the cursor) has no placeholder to judge.
  assert.equal(placeholderIsDim("❯\u00a0\x1b[7m \x1b[0m"), false);
});
