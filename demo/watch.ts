/**
 * Demo: the tmux watcher on a private tmux server. One pane hits a limit that resets in ~10 s and
 * is resumed; in another, a destructive prompt appears the moment the text arrives, and it gets
 * no Enter, and the user's notify.command hears of it.
 *
 * @module
 */

import { spawnLifeline } from "../tests/helpers/lifeline.ts";
import { agentScreen, dialogScreen } from "../tests/helpers/screens.ts";
import { withTmux } from "../tests/helpers/tmux_harness.ts";
import type { DemoPlace } from "./hooks.ts";
import { expect, heading, say, show, step } from "./narrate.ts";

/** Runs the watcher against two fake agents and narrates what it did. */
export async function demoWatch({ project, home }: DemoPlace, scratch: string): Promise<void> {
  heading("watch tmux: resume after the real reset, never into a prompt");
  await Deno.mkdir(`${project}/.lifeline`, { recursive: true });
  // The user's notify.command: a stand-in for notify-send that writes what it is told to a file.
  const notified = `${scratch}/notified.txt`;
  const notifyCommand = [
    "sh",
    "-c",
    `printf '%s %s: %s\\n' "$LIFELINE_EVENT" "$LIFELINE_PANE" "$1" >> ${notified}`,
    "notify",
  ];
  await Deno.writeTextFile(
    `${project}/.lifeline/config.json`,
    JSON.stringify({
      watch: { resumeMarginSeconds: 1, staggerSeconds: 0, verifyDelaySeconds: 2 },
    }),
  );
  // What lifeline runs is the user's to choose: notify.command lives in the user's config only.
  await Deno.mkdir(`${home}/.config/lifeline`, { recursive: true });
  await Deno.writeTextFile(
    `${home}/.config/lifeline/config.json`,
    JSON.stringify({ notify: { command: notifyCommand, tmux: false } }),
  );
  await withTmux(scratch, async (tmux) => {
    const reset = Math.floor(Date.now() / 1000) + 10;
    const banner = agentScreen({
      conversation: ["❯ refactor the auth module", `  ⎿  Claude AI usage limit reached|${reset}`],
    });
    const working = agentScreen({
      conversation: ["❯ continue", "✻ Picking up the refactor… (2s · esc to interrupt)"],
      footer: ["  esc to interrupt"],
    });
    const prompt = dialogScreen(["❯ clean up"], [
      " Bash command",
      " git push --force origin main",
      " Do you want to proceed?",
      " ❯ 1. Yes",
      "   2. No",
    ]);
    step(`Two fake agents ("claude") on a private tmux server; both hit a limit resetting in 10 s`);
    const first = await tmux.addAgent(banner, { afterEnter: working });
    // The second one opens a permission prompt as soon as a key arrives: the watcher's look
    // after typing the text, before Enter, must catch it.
    const second = await tmux.addAgent(banner, { onFirstKey: prompt });
    show((await tmux.capture(first)).split("\n").filter((l) => l.trim()).slice(0, 2).join("\n"));

    step("lifeline watch tmux --socket <private> --interval 2   (its output:)");
    const watcher = spawnLifeline(
      ["watch", "tmux", "--socket", tmux.socket, "--interval", "2", "--root", project],
      { env: { HOME: home } },
    );
    const lines: string[] = [];
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of watcher.stdout) {
        for (const line of decoder.decode(chunk).split("\n").filter(Boolean)) {
          lines.push(line);
          show(line.replace(/^\S+ /, ""), "  │ ");
        }
      }
    })();
    const deadline = Date.now() + 20_000;
    while (!lines.some((l) => /no Enter/.test(l)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    watcher.kill("SIGTERM");
    await watcher.status;
    await reading;
    await watcher.stderr.cancel();
    const typedFirst = (await tmux.received(first)).map((r) => JSON.stringify(r.text));
    const typedSecond = (await tmux.received(second)).map((r) => JSON.stringify(r.text));
    say(`  The first agent received: ${typedFirst.join(", ")} (two separate writes)`);
    say(`  The second agent received: ${typedSecond.join(", ")}, and no Enter`);
    expect(typedFirst.join() === '"continue","\\r"', "the first pane is resumed once");
    expect(typedSecond.join() === '"continue"', "the prompt never gets an Enter");
    step(`notify.command (["sh", "-c", "printf … >> notified.txt"]) was told:`);
    const told = await Deno.readTextFile(notified).catch(() => "");
    show(told);
    expect(
      told.split("\n").filter(Boolean).length === 1 && told.includes(second.id),
      "the refusal reaches the user's notify.command, once",
    );
  });
}
