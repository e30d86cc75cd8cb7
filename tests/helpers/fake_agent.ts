/**
 * A stand-in for the agent in a tmux pane: it draws a screen from a file and records every byte
 * it receives, one JSON line per read (`{"at": epoch ms, "text": "…"}`), so tests can see exactly
 * what was typed and in how many writes.
 *
 *   fake_agent.ts <screen-file> <log-file>
 *
 * Like the client, it echoes typed text into its input box (the line that starts with `❯` and a
 * no-break space), after whatever the box already holds (a draft; a placeholder, drawn with
 * escapes, is replaced), and takes Backspace, which
 * eats into the draft once the typed text is gone. It redraws in place, line by line, as the
 * client does, so nothing it drew scrolls into tmux's history. The screen is redrawn whenever
 * the file changes. Files
 * beside the screen file script what happens next:
 *   `<screen-file>.after-enter`      replaces the screen when Enter arrives (the agent resumes);
 *   `<screen-file>.on-first-key`     replaces it when the first byte arrives (a prompt that
 *                                    appears while the watcher types).
 *
 * Run it as `exec -a claude deno run …` so tmux reports the pane's command as `claude`.
 *
 * @module
 */

const [screenFile, logFile] = Deno.args as [string, string];
const encoder = new TextEncoder();
let shown = "";
let drawn = "";
/** What was typed since the screen was drawn, and how many characters of its draft were erased. */
let input = "";
let erased = 0;
let keys = 0;

/** The screen with the input box showing its draft, less what was erased, and what was typed. */
function withInput(text: string): string {
  if (input === "" && erased === 0) return text;
  return text.replace(/^❯\u00a0(.*)$/m, (_line, draft: string) => {
    // A placeholder (drawn styled, as the client draws one) goes at the first key, as it does in
    // the client; a draft (plain text) stays and takes the keys after it.
    if (draft.includes("\x1b[")) return `❯\u00a0${input}`;
    const kept = [...draft].slice(0, Math.max(0, [...draft].length - erased)).join("");
    return `❯\u00a0${kept}${input}`;
  });
}

function draw(text: string): void {
  shown = text;
  const frame = withInput(text);
  if (frame === drawn) return;
  drawn = frame;
  // Home, then each line over the old one (erasing its rest), then erase below: in place, as the
  // client redraws, without its final newline (so a full screen does not scroll).
  const body = frame.replace(/\n$/, "").split("\n").join("\x1b[K\r\n");
  Deno.stdout.writeSync(encoder.encode(`\x1b[H${body}\x1b[K\x1b[J`));
}

async function readScreen(path = screenFile): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}

async function switchTo(path: string): Promise<boolean> {
  const next = await readScreen(path);
  if (next === undefined) return false;
  await Deno.writeTextFile(screenFile, next);
  draw(next);
  return true;
}

if (Deno.stdin.isTerminal()) Deno.stdin.setRaw(true);
draw(await readScreen() ?? "");

(async () => {
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const text = await readScreen() ?? shown;
    if (text !== shown) draw(text);
  }
})();

const buffer = new Uint8Array(1024);
for (;;) {
  const n = await Deno.stdin.read(buffer);
  if (n === null) break;
  const text = new TextDecoder().decode(buffer.subarray(0, n));
  await Deno.writeTextFile(logFile, JSON.stringify({ at: Date.now(), text }) + "\n", {
    append: true,
  });
  if (keys++ === 0) await switchTo(`${screenFile}.on-first-key`);
  for (const char of text) {
    if (char === "\r") {
      input = "";
      erased = 0;
      if (!(await switchTo(`${screenFile}.after-enter`))) draw(shown);
    } else if (char === "\x7f" || char === "\b") {
      if (input === "") erased++;
      else input = [...input].slice(0, -1).join("");
      draw(shown);
    } else if (char >= " ") {
      input += char;
      draw(shown);
    }
  }
}
