/**
 * A stand-in for the agent in a tmux pane: it draws a screen from a file and records every byte
 * it receives, one JSON line per read (`{"at": epoch ms, "text": "…"}`), so tests can see exactly
 * what was typed and in how many writes.
 *
 *   fake_agent.ts <screen-file> <log-file>
 *
 * The screen is redrawn whenever the file changes. When Enter arrives and
 * `<screen-file>.after-enter` exists, that screen replaces it (the agent resumes).
 *
 * Run it as `exec -a claude deno run …` so tmux reports the pane's command as `claude`.
 *
 * @module
 */

const [screenFile, logFile] = Deno.args as [string, string];
const encoder = new TextEncoder();
let shown = "";

function draw(text: string): void {
  shown = text;
  // Home, clear, then the screen without its final newline (so a full screen does not scroll).
  Deno.stdout.writeSync(
    encoder.encode("\x1b[H\x1b[2J" + text.replace(/\n$/, "").replace(/\n/g, "\r\n")),
  );
}

async function readScreen(): Promise<string> {
  try {
    return await Deno.readTextFile(screenFile);
  } catch {
    return shown;
  }
}

if (Deno.stdin.isTerminal()) Deno.stdin.setRaw(true);
draw(await readScreen());

(async () => {
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const text = await readScreen();
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
  if (text.includes("\r")) {
    try {
      const next = await Deno.readTextFile(`${screenFile}.after-enter`);
      await Deno.writeTextFile(screenFile, next);
      draw(next);
    } catch {
      // No next screen: keep showing this one.
    }
  }
}
