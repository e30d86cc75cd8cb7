// The README works as written. Its `console` blocks run, in order, as a user would type them:
// HOME is a scratch /home/me, the project is ~/project, and `lifeline` on PATH is this checkout
// with the binary's permissions. Each command's output must match what the README shows. Blocks
// marked `<!-- readme: ... -->` are checked in other ways (see `MARKERS`). `sh` blocks (install,
// Quick start) are not run here: installing needs the network, and the Quick start's demo is run
// by the last test, its test command is this suite.
import assert from "node:assert/strict";
import { DEFAULT_CONFIG } from "../lib/state/config.ts";
import { installLifelineWrapper, REPO_DIR, runLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";
const README = await Deno.readTextFile(`${REPO_DIR}/README.md`);

/** A fenced block of the README, with the marker comment right above it, if any. */
interface Block {
  lang: string;
  body: string[];
  marker: string | null;
  line: number;
}

function blocks(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!);
    const above = lines.slice(0, start).reverse().find((line) => line.trim() !== "") ?? "";
    const marker = /^<!-- readme: (.+) -->$/.exec(above)?.[1] ?? null;
    found.push({ lang: open[1]!, body, marker, line: start + 1 });
  }
  return found;
}

/** One `$ command` of a console block and the output shown under it. */
interface Example {
  command: string;
  expected: string[];
}

function examples(block: Block): Example[] {
  const out: Example[] = [];
  for (let i = 0; i < block.body.length; i++) {
    const line = block.body[i]!;
    if (!line.startsWith("$ ")) {
      assert.ok(out.length > 0, `README line ${block.line}: output before any command`);
      out.at(-1)!.expected.push(line);
      continue;
    }
    let command = line.slice(2);
    while (command.endsWith("\\")) command = command.slice(0, -1) + "\n" + block.body[++i];
    out.push({ command, expected: [] });
  }
  return out;
}

/** What varies between runs and machines, made equal: paths, times, hashes, numbers, spacing. */
function normalize(text: string, home: string): string {
  return text
    .replaceAll(home, "/home/me")
    .replace(/\/tmp\/lifeline-demo-\w+/g, "/tmp/lifeline-demo-X")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, "<time>")
    .replace(/\d{8}T\d{6}Z/g, "<stamp>")
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/g, "<hex>")
    .replace(/\d+(?:\.\d+)?/g, "N")
    .replace(/[ \t]+/g, " ")
    .trim();
}

/**
 * Whether `actual` lines are what `expected` shows. A line `…` stands for any number of lines; a
 * line ending in ` …` for any line that starts with the rest.
 */
function matches(expected: string[], actual: string[]): boolean {
  if (expected.length === 0) return actual.length === 0;
  const [head, ...rest] = expected;
  if (head === "…") {
    for (let skip = 0; skip <= actual.length; skip++) {
      if (matches(rest, actual.slice(skip))) return true;
    }
    return false;
  }
  if (actual.length === 0) return false;
  const line = actual[0]!;
  const ok = head!.endsWith(" …") ? line.startsWith(head!.slice(0, -2)) : line === head;
  return ok && matches(rest, actual.slice(1));
}

const lines = (text: string, home: string) =>
  normalize(text, home).split("\n").map((l) => l.trim()).filter((l) => l !== "");

/** Runs a console block's commands in one shell, from ~/project; returns each one's output. */
async function runBlock(
  commands: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ output: string; code: number }[]> {
  const script = ["exec 2>&1", "export LANG=C.UTF-8", `cd ${JSON.stringify(cwd)}`];
  for (const command of commands) {
    script.push(command, `printf '\\n@@readme-exit %s@@\\n' "$?"`);
  }
  const result = await new Deno.Command("sh", {
    args: ["-c", script.join("\n")],
    clearEnv: true,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(result.stdout);
  const parts = text.split(/\n*@@readme-exit (\d+)@@\n/);
  const out: { output: string; code: number }[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    out.push({ output: parts[i]!, code: Number(parts[i + 1]) });
  }
  assert.equal(out.length, commands.length, `the shell stopped early:\n${text}`);
  return out;
}

Deno.test({
  name: "README: every console example runs and prints what the README shows",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const home = `${dir}/home`;
      await Deno.mkdir(`${home}/project`, { recursive: true });
      await installLifelineWrapper(`${home}/.local/bin`);
      await Deno.writeTextFile(
        `${dir}/gitconfig`,
        "[user]\n\tname = Me\n\temail = me@example.com\n[init]\n\tdefaultBranch = main\n",
      );
      const env = {
        HOME: home,
        PATH: `${home}/.local/bin:${Deno.env.get("PATH")}`,
        GIT_CONFIG_GLOBAL: `${dir}/gitconfig`,
        GIT_CONFIG_NOSYSTEM: "1",
        TZ: "UTC",
        NO_COLOR: "1",
      };
      let ran = 0;
      for (const block of blocks(README)) {
        if (block.marker?.startsWith("file ")) {
          const path = `${home}/project/${block.marker.slice("file ".length)}`;
          const text = await Deno.readTextFile(path);
          assert.deepEqual(
            JSON.parse(text.replaceAll(home, "/home/me")),
            JSON.parse(block.body.join("\n")),
            `README line ${block.line}: ${path} is not what the README shows`,
          );
          continue;
        }
        if (block.lang !== "console") continue;
        const shown = examples(block);
        // Run exactly as written: an example that only works at /home/me does not work.
        const commands = shown.map((e) => e.command);
        const results = await runBlock(commands, env, `${home}/project`);
        shown.forEach((example, i) => {
          const { output, code } = results[i]!;
          const where = `README line ${block.line}, \`${example.command}\``;
          assert.equal(code, 0, `${where} exited ${code}:\n${output}`);
          const expected = example.expected.map((l) => normalize(l, home)).filter((l) => l !== "");
          assert.ok(
            matches(expected, lines(output, home)),
            `${where} printed:\n${output}\nbut the README shows:\n${example.expected.join("\n")}`,
          );
          ran++;
        });
      }
      assert.ok(ran >= 20, `only ${ran} README commands ran`);
    });
  },
});

Deno.test({
  name: "README: the configuration shown is the defaults, and a valid config file",
  ignore: IGNORE,
  async fn() {
    const configs = blocks(README).filter((b) => b.marker === "config");
    assert.equal(configs.length, 1);
    assert.deepEqual(JSON.parse(configs[0]!.body.join("\n")), DEFAULT_CONFIG);
    await withTempDir(async (dir) => {
      // As the user's config: it holds the keys only the user may set.
      await Deno.mkdir(`${dir}/.config/lifeline`, { recursive: true });
      await Deno.writeTextFile(`${dir}/.config/lifeline/config.json`, configs[0]!.body.join("\n"));
      const result = await runLifeline(["status", "--root", dir], { env: { HOME: dir } });
      assert.equal(result.code, 0, result.stderr);
    });
  },
});

Deno.test({
  name: "README: the Quick start's demo runs, and the excerpts shown from it are what it prints",
  ignore: IGNORE,
  async fn() {
    const demo = await new Deno.Command(Deno.execPath(), {
      args: ["task", "demo"],
      cwd: REPO_DIR,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const printed = new TextDecoder().decode(demo.stdout);
    assert.ok(
      demo.success,
      `${printed.split("\n").slice(-40).join("\n")}\n${new TextDecoder().decode(demo.stderr)}`,
    );
    const actual = lines(printed, "/nonexistent").map((l) => l.replace(/^[│>»] ?/, "").trim());
    const excerpts = blocks(README).filter((b) => b.marker === "demo-output");
    assert.ok(excerpts.length >= 2);
    for (const excerpt of excerpts) {
      // Each excerpt's lines appear in the demo's output, in order ("…" skips any lines).
      let at = 0;
      for (const raw of excerpt.body) {
        const line = normalize(raw, "/nonexistent");
        if (line === "" || line === "…") continue;
        const found = actual.findIndex((l, i) => i >= at && l === line);
        assert.ok(found >= 0, `README line ${excerpt.line}: the demo did not print\n${raw}`);
        at = found + 1;
      }
    }
    assert.match(printed, /Demo finished in \d+\.\d s\./);
  },
});
