/**
 * Agent screens laid out like Claude Code 2.1.328 draws them in a 160x50 pane (reference §9): the
 * conversation, blank lines, the input box between two rules, the footer.
 *
 * @module
 */

const WIDTH = 160;
const HEIGHT = 50;
const RULE = "─".repeat(WIDTH);

/** A full screen: conversation at the top, the idle input box and footer at the bottom. */
export function agentScreen(
  {
    conversation,
    input = "",
    footer = ["  ⏵⏵ auto mode on (shift+tab to cycle)"],
    width = WIDTH,
    height = HEIGHT,
  }: {
    conversation: string[];
    input?: string;
    footer?: string[];
    /** The pane's size (160x50 unless a case needs another). */
    width?: number;
    height?: number;
  },
): string {
  const rule = "─".repeat(width);
  const bottom = [rule, `❯\u00a0${input}`, rule, ...footer];
  const blank = Math.max(1, height - conversation.length - bottom.length);
  return [...conversation, ...Array(blank).fill(""), ...bottom].join("\n") + "\n";
}

/** A screen whose bottom is a dialog (no input box), like a permission prompt. */
export function dialogScreen(conversation: string[], dialog: string[]): string {
  const blank = Math.max(1, HEIGHT - conversation.length - dialog.length - 1);
  return [...conversation, ...Array(blank).fill(""), RULE, ...dialog].join("\n") + "\n";
}

/** `h:mm` with am/pm, as the client writes times (`toLocaleTimeString` en-US, lower-cased). */
export function clockTime(ms: number, timeZone = "UTC"): string {
  const text = new Date(ms).toLocaleTimeString("en-US", {
    hour: "numeric",
    minute: "2-digit",
    hour12: true,
    timeZone,
  });
  return text.replace(":00 ", " ").replace(" AM", "am").replace(" PM", "pm");
}

/** `Nov 30` for a date, as the client writes it for resets more than 24 h away. */
export function monthDay(ms: number, timeZone = "UTC"): string {
  return new Date(ms).toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone });
}

/** What the agent shows once it picked up a resume: at work. */
export const WORKING = agentScreen({
  conversation: ["❯ continue", "✻ Working… (1s · esc to interrupt)"],
  footer: ["  esc to interrupt"],
});
