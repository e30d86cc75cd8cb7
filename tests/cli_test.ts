import assert from "node:assert/strict";
import manifest from "../deno.json" with { type: "json" };
import { COMMANDS } from "../commands/mod.ts";
import { runLifeline, spawnLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

Deno.test("lifeline --version prints the version from deno.json", async () => {
  const result = await runLifeline(["--version"]);
  assert.equal(result.code, 0);
  assert.equal(result.stdout, `lifeline ${manifest.version}\n`);
});

Deno.test("lifeline --help lists every command with its summary", async () => {
  const result = await runLifeline(["--help"]);
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^Usage: lifeline <command>/);
  for (const command of COMMANDS) {
    assert.ok(result.stdout.includes(command.name), command.name);
    assert.ok(result.stdout.includes(command.summary), command.summary);
  }
});

Deno.test("every command answers --help with its own usage", async () => {
  for (const command of COMMANDS) {
    const result = await runLifeline([...command.name.split(" "), "--help"]);
    assert.equal(result.code, 0, command.name);
    assert.ok(
      result.stdout.startsWith(`Usage: lifeline ${command.name}`),
      `${command.name}: ${result.stdout.split("\n")[0]}`,
    );
  }
});

Deno.test("no command, an unknown command or an unknown flag exits 64 with usage and error", async () => {
  await withTempDir(async (home) => {
    const env = { HOME: home };
    const none = await runLifeline([], { env });
    assert.equal(none.code, 64);
    assert.match(none.stderr, /Usage: lifeline/);
    assert.match(none.stderr, /error: missing command/);

    const unknown = await runLifeline(["frobnicate"], { env });
    assert.equal(unknown.code, 64);
    assert.match(unknown.stderr, /^Usage: lifeline <command>/);
    assert.match(unknown.stderr, /error: unknown command "frobnicate"/);

    const flag = await runLifeline(["selfheal", "status", "--bogus"], { env });
    assert.equal(flag.code, 64);
    assert.match(flag.stderr, /^Usage: lifeline selfheal/);
    assert.match(flag.stderr, /error: Unknown option '--bogus'/);

    const hookFlag = await runLifeline(["hook", "remind", "--bogus"], { env, stdin: "{}" });
    assert.equal(hookFlag.code, 64);
    assert.equal(hookFlag.stdout, "");

    const group = await runLifeline(["hook"], { env });
    assert.equal(group.code, 64);
    assert.match(group.stderr, /Usage: lifeline hook </);
  });
});

Deno.test("an unknown hook name exits 1 with one line, never 2", async () => {
  const result = await runLifeline(["hook", "bogus"], { stdin: "{}" });
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.equal(result.stderr.trimEnd().split("\n").length, 1);
  assert.match(result.stderr, /unknown command "hook bogus"/);
});

/** Runs `lifeline <args>` with its stdout closed by the reader at once; returns code and stderr. */
async function withClosedStdout(
  args: string[],
  options: { env: Record<string, string>; cwd: string },
): Promise<{ code: number; stderr: string }> {
  const child = spawnLifeline(args, options);
  await child.stdout.cancel(); // the reader is gone before the first line is written
  const [status, stderr] = await Promise.all([child.status, new Response(child.stderr).text()]);
  return { code: status.code, stderr };
}

Deno.test({
  name: "a stdout closed by its reader ends the command quietly (status | head -1, and others)",
  ignore: Deno.build.os === "windows",
  async fn(t) {
    await withTempDir(async (dir) => {
      const project = `${dir}/project`;
      const env = { HOME: `${dir}/home` };
      // Something to print: a session, and a tmux pane whose program counts as the agent.
      await Deno.mkdir(`${project}/sessions/s1`, { recursive: true });
      await Deno.writeTextFile(`${project}/sessions/s1/heartbeat`, "1\n");
      await Deno.mkdir(`${dir}/home/.config/lifeline`, { recursive: true });
      await Deno.writeTextFile(
        `${dir}/home/.config/lifeline/config.json`,
        '{"watch": {"agentCommands": ["sleep"]}}',
      );
      const socket = `lifeline-test-${crypto.randomUUID().slice(0, 8)}`;
      await new Deno.Command("tmux", { args: ["-L", socket, "new-session", "-d", "sleep 60"] })
        .output();
      try {
        for (
          const args of [
            ["status"],
            ["doctor"],
            ["watch", "tmux", "--socket", socket, "--once", "--dry-run"],
            ["daemon", "stale", "--once", "--json"],
            ["--help"],
          ]
        ) {
          await t.step(args.join(" "), async () => {
            const result = await withClosedStdout(args, { env, cwd: project });
            assert.equal(result.stderr, "");
            assert.equal(result.code, 0);
          });
        }
      } finally {
        await new Deno.Command("tmux", { args: ["-L", socket, "kill-server"] }).output();
      }
    });
  },
});

Deno.test("commands refuse a --root that does not exist, and create nothing", async (t) => {
  await withTempDir(async (dir) => {
    const env = { HOME: `${dir}/home` };
    const typo = `${dir}/typo`;
    for (
      const args of [
        ["status"],
        ["doctor"],
        ["init", "--scope", "project"],
        ["fail", "init"],
        ["fail", "handle", "--task", "T1", "--skill", "build", "--error", "x"],
        ["fail", "restore", "refs/lifeline/backups/x"],
        ["fail", "list"],
        ["fail", "prune", "--keep", "1"],
        ["fail", "reset", "--task", "T1"],
        ["daemon", "stale", "--once"],
        ["watch", "tmux", "--once"],
        ["forget", "s1"],
      ]
    ) {
      await t.step(args.join(" "), async () => {
        const result = await runLifeline([...args, "--root", typo], { env });
        assert.equal(result.code, 1, result.stderr);
        assert.equal(
          result.stderr,
          `error: the project root "${typo}" does not exist\n` +
            "hint: check the --root path, or create the directory first\n",
        );
        await assert.rejects(Deno.lstat(typo), Deno.errors.NotFound);
      });
    }
  });
});

Deno.test("typos: did you mean, for commands, subcommands and flags", async (t) => {
  await withTempDir(async (home) => {
    const env = { HOME: home };
    const rows: [string[], number, RegExp][] = [
      [
        ["stauts"],
        64,
        /^Usage: lifeline <command>.*\nerror: unknown command "stauts" \(did you mean "status"\?\)\n$/s,
      ],
      [
        ["watch", "tmx"],
        64,
        /^Usage: lifeline watch <tmux\|pause\|resume>\nerror: unknown command "watch tmx" \(did you mean "watch tmux"\?\)\n$/,
      ],
      [
        ["daemon", "stal"],
        64,
        /^Usage: lifeline daemon <stale>\nerror: unknown command "daemon stal" \(did you mean "daemon stale"\?\)\n$/,
      ],
      [
        ["fail", "hndle"],
        64,
        /^Usage: lifeline fail <init\|handle\|restore\|list\|prune\|reset>\nerror: unknown command "fail hndle" \(did you mean "fail handle"\?\)\n$/,
      ],
      [["status", "--jsn"], 64, /error: Unknown option '--jsn' \(did you mean "--json"\?\)\n$/],
      // DESIGN §5: a mistyped hook in settings.json must not become a usage error: exit 1, one line.
      [
        ["hook", "crsh"],
        1,
        /^error: unknown command "hook crsh" \(did you mean "hook crash"\?\)\n$/,
      ],
    ];
    for (const [args, code, stderr] of rows) {
      await t.step(args.join(" "), async () => {
        const result = await runLifeline(args, { env, stdin: "{}" });
        assert.equal(result.code, code, result.stderr);
        assert.match(result.stderr, stderr);
        assert.equal(result.stdout, "");
      });
    }
  });
});

Deno.test("lifeline help <command>, help <group>, -v and version", async (t) => {
  await t.step("help status is status --help", async () => {
    const help = await runLifeline(["help", "status"]);
    assert.equal(help.code, 0);
    assert.equal(help.stdout, (await runLifeline(["status", "--help"])).stdout);
  });
  await t.step("help hook lists the hooks", async () => {
    const help = await runLifeline(["help", "hook"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: lifeline hook <crash\|track\|remind\|heartbeat>\n/);
    assert.match(help.stdout, /hook heartbeat +PostToolUse hook/);
  });
  await t.step("help of an unknown command is a usage error", async () => {
    const help = await runLifeline(["help", "stauts"]);
    assert.equal(help.code, 64);
    assert.match(help.stderr, /did you mean "status"/);
  });
  for (const flag of ["-v", "version"]) {
    await t.step(flag, async () => {
      const result = await runLifeline([flag]);
      assert.equal(result.code, 0);
      assert.equal(result.stdout, `lifeline ${manifest.version}\n`);
    });
  }
});

Deno.test("daemon stale --interval -1 says what is wrong with -1", async () => {
  const result = await runLifeline(["daemon", "stale", "--interval", "-1"]);
  assert.equal(result.code, 64);
  assert.match(
    result.stderr,
    /error: --interval must be a whole number from 1 to 86400, got "-1"\n$/,
  );
});

Deno.test("with --json, errors are one JSON object on stderr too", async (t) => {
  await withTempDir(async (dir) => {
    const env = { HOME: dir };
    const rows: [string, string[], Record<string, unknown>][] = [
      ["a usage error", ["status", "--json", "--bogus"], {
        error: "Unknown option '--bogus'",
        usage: "Usage: lifeline status [--root DIR] [--json]",
        exit_code: 64,
      }],
      ["a domain error", ["status", "--json", "--root", `${dir}/typo`], {
        error: `the project root "${dir}/typo" does not exist`,
        hint: "check the --root path, or create the directory first",
        exit_code: 1,
      }],
      ["an unknown command", ["stauts", "--json"], {
        error: 'unknown command "stauts" (did you mean "status"?)',
        usage: "Usage: lifeline <command> [options]",
        exit_code: 64,
      }],
    ];
    for (const [name, args, expected] of rows) {
      await t.step(name, async () => {
        const result = await runLifeline(args, { env });
        assert.equal(result.code, expected.exit_code);
        assert.equal(result.stdout, "");
        assert.equal(result.stderr.trimEnd().split("\n").length, 1, result.stderr);
        assert.deepEqual(JSON.parse(result.stderr), expected);
      });
    }
  });
});
