// The watcher's first promise as a property: over random screens built from the pieces real
// screens are made of (banners, prompts, dialogs, input box contents, footers, status lines,
// tool-output blocks, quotes, code), at random widths with the client's own wrapping, a
// keystroke is decided only for an agent pane whose input box is empty (or holds exactly the
// resume text, before Enter), with no prompt, dialog, busy row or armed auto-continue on screen.
// The generator knows what it put on each screen; the watcher does not.
import assert from "node:assert/strict";
import fc from "fast-check";
import { lastLinesRefusal, readScreen } from "../lib/claude/screen.ts";
import type { RecordSignal } from "../lib/watch/records_policy.ts";
import { decidePane, keystrokeRefusal, newRecord } from "../lib/watch/watch_policy.ts";

const NOW = Date.parse("2026-12-01T15:30:00Z");
const RESUME = "continue";

/** A piece of a screen, and what it makes true. */
interface Piece {
  lines: string[];
  prompt?: boolean;
  busy?: boolean;
  armed?: boolean;
  cancels?: boolean;
  /** New conversation (a prompt, a reply, a tool call): what stands above it is the past. */
  newer?: boolean;
}

const banner = (text: string): Piece => ({
  lines: ["❯ keep going", `  ⎿  ${text}`],
  newer: true,
});

/** Conversation pieces. Anything that makes a key do something else is flagged. */
const CONVERSATION: Piece[] = [
  { lines: ["❯ refactor the parser", "● Working on it; the tests pass."], newer: true },
  {
    lines: ["● Bash(tail -1 notes.txt)", "  ⎿  Claude AI usage limit reached|1796134000"],
    newer: true,
  },
  {
    lines: ["● It printed:", "", "      You've hit your 5-hour limit · resets 3pm (UTC)"],
    newer: true,
  },
  { lines: ["  > You've hit your 5-hour limit · resets 3pm (UTC)"] },
  {
    lines: ["● Here:", "  ```", "  You've hit your 5-hour limit · resets 3pm (UTC)", "  ```"],
    newer: true,
  },
  banner("You've hit your 5-hour limit · resets 3pm (UTC)"),
  banner("You've hit your weekly limit · resets Dec 4, 4:11pm (UTC)"),
  banner("Claude AI usage limit reached|1796134000"),
  banner("5-hour limit reached ∙ resets 3pm"),
  { lines: ["  /upgrade to increase your usage limit."] },
  {
    lines: ["● Usage limit reached · continuing automatically at 3pm · esc to cancel"],
    armed: true,
  },
  { lines: ["● Automatic continue cancelled · /rate-limit-options to re-arm"], cancels: true },
  { lines: ["● API Error: Repeated 529 Overloaded errors. The API is at capacity."] },
  { lines: ["● API Error: 529 Overloaded. Press Enter to retry"] },
  { lines: ["✻ Sautéed for 12s"] },
  { lines: ["✻ Thinking… (4s · esc to interrupt)"], busy: true },
  { lines: ["✶ API error · retrying in 3s · attempt 2/3"], busy: true },
  { lines: ["  Overwrite notes.txt? [y/N]"], prompt: true },
  { lines: ["● Do you want to proceed with the migration?"], prompt: true, newer: true },
  { lines: ["  8 tasks (4 done, 1 in progress, 3 open)", "  ◼ a", "  □ b"] },
  { lines: ["❯ delete the old logs and force push"], newer: true },
  { lines: ["  ⎿  Error: ECONNREFUSED 127.0.0.1:5432"] },
  // A reply that quotes a prompt or the limit menu: a prompt where it stands last.
  {
    lines: ['● It will ask "Reset all data? [y/N]" and then', "  Do you want to merge it?"],
    prompt: true,
    newer: true,
  },
  {
    lines: [
      "● The menu reads:",
      "  What do you want to do?",
      "  ❯ 1. Stop and wait for limit to reset",
      "    2. Upgrade your plan",
    ],
    prompt: true,
    newer: true,
  },
  // Right-aligned in a reply, as the client draws its own notices: still the reply's text.
  {
    lines: [
      "● Here:",
      `${" ".repeat(60)}You've hit your 5-hour limit · resets 3pm (UTC)`,
    ],
    newer: true,
  },
];

/** What stands where the input box would be. */
const BOTTOMS: (Piece & { input: string | null; kind: string; above?: string[] })[] = [
  { kind: "empty", input: "", lines: [] },
  { kind: "placeholder", input: "", lines: [] },
  { kind: "resume text", input: RESUME, lines: [] },
  { kind: "draft", input: "git reset --hard origin/main && git push -f", lines: [] },
  { kind: "draft", input: "half a thought", lines: [] },
  // Drafts that start like a placeholder, and one of several lines holding a rule.
  { kind: "draft", input: 'Try "make release" on the prod box once the limit resets', lines: [] },
  { kind: "draft", input: "Type your message to the team…", lines: [] },
  { kind: "draft", input: "tag v2, then:\n  ──────────\n  >", lines: [] },
  {
    kind: "limit menu, above a draft",
    input: "npm publish",
    prompt: true,
    lines: [],
    above: [
      "  What do you want to do?",
      "  ❯ 1. Stop and wait for limit to reset",
      "  Enter to confirm · Esc to cancel",
    ],
  },
  {
    kind: "permission prompt",
    input: null,
    prompt: true,
    lines: [" Bash command", " rm -rf build/", " Do you want to proceed?", " ❯ 1. Yes", "   2. No"],
  },
  {
    kind: "trust dialog",
    input: null,
    prompt: true,
    lines: [
      " Quick safety check: Is this a project you trust?",
      " ❯ No, exit",
      "   Yes, I trust this folder",
    ],
  },
  {
    kind: "limit menu, unsafe choice",
    input: null,
    prompt: true,
    lines: [
      " What do you want to do?",
      " ❯ 1. Upgrade your plan",
      "   2. Stop and wait for limit to reset",
      " Enter to confirm · Esc to cancel",
    ],
  },
  {
    kind: "auto-mode dialog",
    input: null,
    prompt: true,
    lines: [
      " Auto mode can't check actions in this session",
      " Enter to stay in auto mode · Esc to cancel",
    ],
  },
];

const FOOTERS: Piece[] = [
  { lines: ["  ⏵⏵ auto mode on (shift+tab to cycle)"] },
  { lines: ["  [Opus 4.8] │ Context 12% │ 5h:100%", "  ⏵⏵ auto mode on (shift+tab to cycle)"] },
  { lines: ["  ⏵⏵ auto mode on (shift+tab to cycle) · esc to interrupt"], busy: true },
  {
    lines: [
      "  ⚠ Usage limit reached · limit resets 3pm",
      "    Continuing automatically at 3pm · Esc to cancel",
    ],
    armed: true,
  },
  { lines: ["  ⚠ Usage limit reached · limit resets 3pm", "    Continuing shortly"], armed: true },
  { lines: ["  ? for shortcuts"] },
  // The user's status line: its words are not a prompt, nor a limit.
  { lines: ["  [Opus 4.8] │ ~/src/shop │ ⎇ fix/delete-button │ Context 12%"] },
  { lines: ["  Session limit reached · resets 3pm"] },
  // A menu drawn in a box under the input box.
  { lines: ["  ┌──────────┐", "  │ ❯ 1. Yes │", "  │   2. No  │", "  └──────────┘"], prompt: true },
];

/** Wraps a line the way the client does: at the width, the rest indented under it. */
function wrap(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const indent = " ".repeat(Math.min(5, line.length - line.trimStart().length + 2));
  const out: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const cut = rest.lastIndexOf(" ", width);
    const at = cut > indent.length + 5 ? cut : width;
    out.push(rest.slice(0, at).trimEnd());
    rest = indent + rest.slice(at).trimStart();
  }
  out.push(rest);
  return out;
}

interface Built {
  text: string;
  /** What the generator knows: a key sent now would go to an empty agent input box. */
  empty: boolean;
  /** …or one holding exactly the resume text. */
  holdsResume: boolean;
  /** Something on screen takes keys or means "do not type". */
  unsafe: boolean;
  description: string;
}

function build(
  conversation: Piece[],
  bottom: typeof BOTTOMS[number],
  footer: Piece,
  width: number,
): Built {
  const rule = "─".repeat(width);
  const lines = conversation.flatMap((p) => p.lines).flatMap((l) => wrap(l, width));
  const placeholder = bottom.kind === "placeholder"
    ? "Resend your message to try again"
    : bottom.input;
  const [first, ...more] = (placeholder ?? "").split("\n");
  const below = bottom.input === null
    ? [rule, ...bottom.lines]
    : [rule, `❯\u00a0${first}`, ...more, rule, ...footer.lines];
  const above = (bottom.above ?? []).flatMap((l) => wrap(l, width));
  const screen = [...lines, ...above, "", "", ...below.flatMap((l) => wrap(l, width))].join("\n") +
    "\n";
  const armedAt = conversation.findLastIndex((p) => p.armed);
  const cancelledAt = conversation.findLastIndex((p) => p.cancels);
  // Armed: a notice not cancelled and not followed by newer conversation, or the footer says so.
  const armed = (armedAt > cancelledAt && !conversation.slice(armedAt + 1).some((p) => p.newer)) ||
    (bottom.input !== null && !!footer.armed);
  // Busy only counts where the client shows it as current: the last rows, or the footer.
  const last = conversation.at(-1);
  const busy = !!last?.busy || (bottom.input !== null && !!footer.busy);
  // Under an input box, a question above the user's latest message was answered by it: history.
  const lastUser = bottom.input === null
    ? -1
    : conversation.findLastIndex((p) => p.lines[0]!.startsWith("❯ "));
  const prompt = !!bottom.prompt || (bottom.input !== null && !!footer.prompt) ||
    conversation.some((p, i) => p.prompt && i >= conversation.length - 2 && i > lastUser);
  return {
    text: screen,
    empty: bottom.input === "",
    holdsResume: bottom.input === RESUME,
    unsafe: prompt || busy || armed,
    description: `${conversation.length} pieces, bottom: ${bottom.kind}, ${width} columns`,
  };
}

const screens = fc.tuple(
  fc.array(fc.constantFrom(...CONVERSATION), { minLength: 1, maxLength: 7 }),
  fc.constantFrom(...BOTTOMS),
  fc.constantFrom(...FOOTERS),
  fc.integer({ min: 40, max: 250 }),
  fc.constantFrom<RecordSignal | null>(
    null,
    {
      kind: "limited",
      at: NOW - 3 * 3600_000,
      text: "You've hit your 5-hour limit",
      limitKind: "5-hour",
      resetAt: NOW - 60 * 60_000,
      native: null,
      confirmed: true,
    },
    {
      kind: "transient",
      at: NOW - 3600_000,
      text: "API Error: 529",
      error: "server_error",
      confirmed: true,
    },
    { kind: "working", at: NOW - 60_000 },
  ),
).map(([conversation, bottom, footer, width, records]) => ({
  ...build(conversation, bottom, footer, width),
  records,
}));

const SETTINGS = {
  resumeMarginSeconds: 0,
  nativeMarginSeconds: 180,
  transientBackoffSeconds: 0,
  maxAttempts: 3,
  foregroundRetries: 3,
  localZone: "UTC",
};

/** What the watcher would send to this screen: the first key of a resume, or nothing. */
function firstKey(text: string, records: RecordSignal | null): "text" | "enter" | null {
  const reading = readScreen(text);
  // A record first seen four hours ago: any reset on screen has passed.
  const record = { ...newRecord("%1", "s", "1:1"), first_seen_at: NOW - 4 * 3600_000 };
  const decided = decidePane(record, { reading, screenHash: "h", records }, {
    ...SETTINGS,
    now: NOW,
  });
  const again = decidePane(decided.state, { reading, screenHash: "h2", records }, {
    ...SETTINGS,
    now: NOW,
  });
  const action = [...decided.actions, ...again.actions].find((a) => a.kind === "resume");
  if (!action || action.kind !== "resume") return null;
  const safeLimitMenu = reading.state === "limit_menu" && reading.keys === "enter";
  if (lastLinesRefusal(text, { safeLimitMenu })) return null;
  return keystrokeRefusal(reading, { expect: "", keys: action.keys }) === null ? action.keys : null;
}

/** Whether Enter would follow, with the resume text in the input box. */
function enterAfterText(text: string): boolean {
  const reading = readScreen(text);
  return !lastLinesRefusal(text) &&
    keystrokeRefusal(reading, { expect: RESUME, keys: "text" }) === null;
}

const RUNS = Number(Deno.env.get("LIFELINE_PROPERTY_RUNS") ?? 20_000);

Deno.test(`a keystroke only ever reaches an idle agent's input box (${RUNS} random screens)`, () => {
  let typed = 0;
  fc.assert(
    fc.property(screens, (s) => {
      const key = firstKey(s.text, s.records);
      if (key !== null) {
        typed++;
        assert.ok(s.empty && !s.unsafe, `a ${key} keystroke into: ${s.description}\n${s.text}`);
      }
      if (enterAfterText(s.text)) {
        assert.ok(s.holdsResume && !s.unsafe, `Enter into: ${s.description}\n${s.text}`);
      }
    }),
    { numRuns: RUNS, seed: Number(Deno.env.get("LIFELINE_PROPERTY_SEED") ?? 20261201) },
  );
  // The generator makes resumable screens too: the property is not true for want of typing.
  assert.ok(typed > RUNS / 50, `only ${typed} of ${RUNS} screens were typed into`);
});
