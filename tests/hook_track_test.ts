import assert from "node:assert/strict";
import { hookInput } from "./helpers/fixtures.ts";
import { ownLogLines, parseHookStdout, runLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

type Input = Record<string, unknown> & { session_id: string; prompt_id?: unknown };

/** Runs a hook on `input` moved into `<dir>/project`; returns the context it gave, or null. */
async function hook(dir: string, name: string, input: Input, event?: string) {
  await Deno.mkdir(`${dir}/project`, { recursive: true });
  const result = await runLifeline(["hook", name], {
    stdin: JSON.stringify({ ...input, cwd: `${dir}/project` }),
    env: { HOME: `${dir}/home` },
  });
  assert.equal(result.code, 0);
  assert.equal(result.stderr, "");
  const output = parseHookStdout(result.stdout, event ?? String(input.hook_event_name));
  return output?.hookSpecificOutput.additionalContext ?? null;
}

const track = (dir: string, input: Input) => hook(dir, "track", input);

function sessionFile(dir: string, input: Input, name: string): string {
  return `${dir}/project/sessions/${input.session_id}/${name}`;
}

async function readIfAny(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

const failure = () => hookInput("hh-tool-fail", "PostToolUseFailure") as Promise<Input>;
const success = () => hookInput("hh-tool-ok", "PostToolUse") as Promise<Input>;

async function mcpFailure(error = "MCP error -32000: connect ECONNREFUSED 127.0.0.1:3002") {
  return { ...await failure(), tool_name: "mcp__firecrawl__scrape", error };
}

Deno.test("tool failures: counted in fail-count-<tool>.txt, advice at exactly 2, reset by a success", async () => {
  await withTempDir(async (dir) => {
    const fail = await failure();
    const ok = { ...await success(), session_id: fail.session_id };
    const count = sessionFile(dir, fail, "fail-count-Bash.txt");
    assert.equal(await track(dir, fail), null, "1 failure: no advice");
    assert.equal(await Deno.readTextFile(count), "1\n");
    const second = await track(dir, fail);
    assert.match(
      second!,
      /^\[TOOL FALLBACK\] Bash failed 2 times in a row\. Stop repeating the same call; use a script file/,
    );
    assert.equal(await track(dir, fail), null, "3: the advice is given once per crossing");
    assert.equal(await Deno.readTextFile(count), "3\n");
    assert.equal(await track(dir, ok), null);
    assert.equal(await readIfAny(count), null, "a success resets the count");
    assert.equal(await track(dir, fail), null);
    assert.match((await track(dir, fail))!, /\[TOOL FALLBACK\]/, "a new crossing, new advice");
  });
});

Deno.test("tool fallback uses .working-state/fallback-tools.md, and survives a malformed one", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/project/.working-state`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/project/.working-state/fallback-tools.md`,
      "| tool | fallback | what the fallback cannot do |\n|---|---|---|\n" +
        "| mcp__firecrawl__* | WebFetch | no JavaScript rendering |\n",
    );
    const fail = { ...await mcpFailure("Tool returned: page not found") };
    await track(dir, fail);
    const advice = await track(dir, fail);
    assert.equal(
      advice,
      "[TOOL FALLBACK] mcp__firecrawl__scrape failed 2 times in a row. Stop repeating the same " +
        "call; use WebFetch (what it cannot do: no JavaScript rendering).",
    );
    await Deno.writeTextFile(
      `${dir}/project/.working-state/fallback-tools.md`,
      "\u0000|||\n|\n-->",
    );
    const other = { ...fail, tool_name: "mcp__other__tool" };
    await track(dir, other);
    assert.match(
      (await track(dir, other))!,
      /^\[TOOL FALLBACK\] mcp__other__tool .* change the approach/,
    );
  });
});

Deno.test("MCP connection errors: waits of 1, 2, 4, 8, 16 s, then [MCP FALLBACK] from the 6th", async () => {
  await withTempDir(async (dir) => {
    const fail = await mcpFailure();
    const advice = [];
    for (let i = 0; i < 7; i++) advice.push(await track(dir, fail));
    for (const [i, wait] of [1, 2, 4, 8, 16].entries()) {
      assert.equal(
        advice[i],
        `[MCP RETRY] mcp__firecrawl__scrape could not reach its server (ECONNREFUSED). ` +
          `Wait ${wait}s, then retry once (attempt ${i + 1}/5).`,
      );
    }
    assert.match(
      advice[5]!,
      /^\[MCP FALLBACK\] mcp__firecrawl__scrape failed 6 times in a row \(ECONNREFUSED\)\. No fallback is mapped for it: ask the user to reconnect the MCP server "firecrawl" with \/mcp/,
    );
    assert.match(advice[6]!, /^\[MCP FALLBACK\] .* 7 times/);
    const state = JSON.parse(
      await Deno.readTextFile(sessionFile(dir, fail, "mcp-retry-mcp__firecrawl__scrape.json")),
    );
    assert.equal(state.attempt, 7);
    assert.equal(typeof state.last_attempt_ts, "number");
    assert.equal(typeof state.next_retry_at, "number");
    // Tool degradation counts them too.
    assert.equal(
      await Deno.readTextFile(sessionFile(dir, fail, "fail-count-mcp__firecrawl__scrape.txt")),
      "7\n",
    );
  });
});

Deno.test("MCP fallback names the mapped tool and what it cannot do; a success resets retries", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/project/.working-state`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/project/.working-state/fallback-tools.md`,
      "- mcp__firecrawl__scrape -> WebFetch (no JavaScript rendering)\n",
    );
    const fail = await mcpFailure('MCP server "firecrawl" disconnected · still retrying');
    for (let i = 0; i < 5; i++) await track(dir, fail);
    assert.equal(
      await track(dir, fail),
      "[MCP FALLBACK] mcp__firecrawl__scrape failed 6 times in a row (MCP disconnect). Use WebFetch " +
        "(what it cannot do: no JavaScript rendering) instead. The server can be reconnected with /mcp.",
    );
    const ok = { ...await success(), session_id: fail.session_id, tool_name: fail.tool_name };
    await track(dir, ok);
    assert.equal(
      await readIfAny(sessionFile(dir, fail, "mcp-retry-mcp__firecrawl__scrape.json")),
      null,
    );
    assert.match((await track(dir, fail))!, /Wait 1s, then retry once \(attempt 1\/5\)/);
  });
});

Deno.test("MCP: the mcp_server field marks an MCP tool; the client's own strings are connection errors", async () => {
  await withTempDir(async (dir) => {
    for (
      const error of [
        "MCP server 'memory' not connected",
        "Error: transport closed unexpectedly",
        "write EPIPE",
        "read ECONNRESET",
        "server is not running",
        "Failed to reconnect to memory.",
      ]
    ) {
      const fail = {
        ...await failure(),
        session_id: crypto.randomUUID(),
        tool_name: "create_entities",
        mcp_server: { name: "memory", source: "user" },
        error,
      };
      assert.match((await track(dir, fail))!, /^\[MCP RETRY\] create_entities .* Wait 1s/, error);
    }
  });
});

Deno.test("StopFailure is one append and prints nothing; Stop resets the model count", async () => {
  await withTempDir(async (dir) => {
    const stopFailure = await hookInput("hh-529", "StopFailure") as Input;
    assert.equal(await track(dir, stopFailure), null);
    const events = (await Deno.readTextFile(sessionFile(dir, stopFailure, "events.jsonl"))).trim()
      .split("\n");
    assert.equal(events.length, 1);
    assert.deepEqual(
      { ...JSON.parse(events[0]!), ts: "" },
      {
        ts: "",
        event: "StopFailure",
        error: "server_error",
        prompt_id: stopFailure.prompt_id,
        message: stopFailure.last_assistant_message,
      },
    );
  });
});

Deno.test("model fallback: three server errors in a row advise the next model; Stop resets", async () => {
  await withTempDir(async (dir) => {
    const start = await hookInput("screen-529", "SessionStart") as Input; // model: claude-opus-5-5
    const sessionStart = { ...start, model: "claude-sonnet-5" };
    await hook(dir, "crash", sessionStart, "SessionStart");
    const base = { ...await hookInput("screen-529", "StopFailure") as Input };
    const tool = { ...await success(), session_id: base.session_id };
    for (const i of [1, 2]) {
      assert.equal(await track(dir, { ...base, prompt_id: `p${i}` }), null);
      assert.equal(await track(dir, tool), null, `${i} failures: no advice yet`);
    }
    await track(dir, { ...base, prompt_id: "p3" });
    const advice = await track(dir, tool);
    assert.match(
      advice!,
      /\[MODEL FALLBACK\] 3 turns in a row failed .* on sonnet .* Switch to opus: run \/model opus/,
    );
    const tracker = JSON.parse(
      await Deno.readTextFile(sessionFile(dir, base, "failure-tracker.json")),
    );
    assert.equal(tracker.consecutive_failures, 3);
    assert.equal(tracker.current_model, "claude-sonnet-5");
    assert.equal(tracker.last_error, "server_error");
    assert.equal(await track(dir, tool), null, "delivered once");

    const stop = { ...await hookInput("hh-text", "Stop") as Input, session_id: base.session_id };
    assert.equal(await track(dir, stop), null);
    assert.equal(
      JSON.parse(await Deno.readTextFile(sessionFile(dir, base, "failure-tracker.json")))
        .consecutive_failures,
      0,
    );
    await track(dir, { ...base, prompt_id: "p4" });
    assert.equal(await track(dir, tool), null, "1 failure after the reset: no advice");
  });
});

Deno.test("model fallback at the top of the ladder, and with no known model", async () => {
  await withTempDir(async (dir) => {
    const start = await hookInput("screen-529", "SessionStart") as Input; // opus
    await hook(dir, "crash", start, "SessionStart");
    const base = await hookInput("screen-529", "StopFailure") as Input;
    for (const i of [1, 2, 3]) await track(dir, { ...base, prompt_id: `p${i}` });
    const tool = { ...await success(), session_id: base.session_id };
    assert.match(
      (await track(dir, tool))!,
      /on opus, the strongest model lifeline knows .* Wait a few minutes .* switch provider/,
    );

    const headless = await hookInput("hh-529", "StopFailure") as Input; // claude -p: no model known
    for (const i of [1, 2, 3]) await track(dir, { ...headless, prompt_id: `q${i}` });
    const tool2 = { ...tool, session_id: headless.session_id };
    assert.match((await track(dir, tool2))!, /Switch to a stronger model than the current one/);
  });
});

Deno.test("rate_limit never counts: wait for the reset, do not switch model", async () => {
  await withTempDir(async (dir) => {
    const limited = await hookInput("hh-429-oauth", "StopFailure") as Input;
    for (const i of [1, 2, 3, 4]) await track(dir, { ...limited, prompt_id: `r${i}` });
    const tool = { ...await success(), session_id: limited.session_id };
    const advice = await track(dir, tool);
    assert.match(
      advice!,
      /\[RATE LIMIT\] The API rate limit was hit \(it resets 5:51pm \(UTC\)\)\. Wait for the reset/,
    );
    assert.doesNotMatch(advice!, /MODEL FALLBACK/);
    const tracker = JSON.parse(
      await Deno.readTextFile(sessionFile(dir, limited, "failure-tracker.json")),
    );
    assert.equal(tracker.consecutive_failures, 0);
  });
});

Deno.test("permanent errors never count and say to escalate to the user", async () => {
  await withTempDir(async (dir) => {
    const base = await hookInput("hh-529", "StopFailure") as Input;
    const cases = [
      {
        error: "authentication_failed",
        last_assistant_message: "Please run /login · API Error: 401",
      },
      { error: "billing_error", last_assistant_message: "Credit balance is too low" },
      { error: "invalid_request", last_assistant_message: "Prompt is too long" },
    ];
    for (const [i, fields] of cases.entries()) {
      await track(dir, { ...base, ...fields, prompt_id: `x${i}` });
    }
    const tool = { ...await success(), session_id: base.session_id };
    const advice = await track(dir, tool);
    for (const { error } of cases) {
      assert.match(
        advice!,
        new RegExp(`\\[API ERROR\\] ${error}.*Do not retry; stop and tell the user`),
      );
    }
    const tracker = JSON.parse(
      await Deno.readTextFile(sessionFile(dir, base, "failure-tracker.json")),
    );
    assert.equal(tracker.consecutive_failures, 0);
  });
});

Deno.test("advice born on StopFailure waits in the outbox and reaches the next prompt once", async () => {
  await withTempDir(async (dir) => {
    const limited = await hookInput("hh-429", "StopFailure") as Input;
    await track(dir, limited);
    const prompt = { ...await hookInput("hh-429", "UserPromptSubmit") as Input };
    const context = await hook(dir, "remind", prompt);
    assert.match(context!, /\[RATE LIMIT\] The API rate limit was hit\. Wait for the reset/);
    const again = await hook(dir, "remind", prompt);
    assert.doesNotMatch(again!, /RATE LIMIT/);
  });
});

Deno.test("an API error is counted once, whether the hook or the transcript saw it first", async () => {
  await withTempDir(async (dir) => {
    // The transcript of a resumed session holds the 529 its StopFailure recorded too.
    const transcript = `${dir}/transcript.jsonl`;
    await Deno.copyFile(
      new URL("./fixtures/claude-code-2.1.328/transcripts/screen-529.jsonl", import.meta.url),
      transcript,
    );
    const stopFailure = {
      ...await hookInput("screen-529", "StopFailure") as Input,
      transcript_path: transcript,
    };
    await track(dir, stopFailure);
    const start = {
      ...await hookInput("screen-529", "SessionStart") as Input,
      source: "resume",
      transcript_path: transcript,
    };
    await hook(dir, "crash", start, "SessionStart");
    await hook(dir, "crash", start, "SessionStart");
    const tracker = JSON.parse(
      await Deno.readTextFile(sessionFile(dir, start, "failure-tracker.json")),
    );
    assert.equal(tracker.consecutive_failures, 1);
    assert.equal(tracker.failures[0].key, stopFailure.prompt_id);
  });
});

Deno.test("a StopFailure the client killed is still counted, from the transcript, at the next start", async () => {
  await withTempDir(async (dir) => {
    const transcript = `${dir}/t.jsonl`;
    const rows = (await Deno.readTextFile(
      new URL("./fixtures/claude-code-2.1.328/transcripts/screen-529.jsonl", import.meta.url),
    )).trim().split("\n").map((line) => JSON.parse(line));
    // Three turns, each ending on the synthetic 529 row, and no StopFailure hook recorded any.
    const lines: string[] = [];
    for (const i of [1, 2, 3]) {
      for (const row of rows) {
        const copy = { ...row };
        if (copy.type === "user" && copy.promptId) copy.promptId = `turn-${i}`;
        if (copy.timestamp) copy.timestamp = new Date(Date.UTC(2026, 10, 30, 15, i)).toISOString();
        lines.push(JSON.stringify(copy));
      }
    }
    await Deno.writeTextFile(transcript, lines.join("\n") + "\n");
    const start = {
      ...await hookInput("screen-529", "SessionStart") as Input,
      model: "claude-haiku-5",
      source: "resume",
      transcript_path: transcript,
    };
    const context = await hook(dir, "crash", start, "SessionStart");
    assert.match(context!, /^\[CRASH RECOVERY\]/);
    assert.match(
      context!,
      /\[MODEL FALLBACK\] 3 turns in a row failed .* on haiku .* Switch to sonnet/,
    );
  });
});

Deno.test("100 concurrent failures of one tool end at exactly 100, with one advice", async () => {
  await withTempDir(async (dir) => {
    const fail = await failure();
    // The claim is exactness under contention; a machine loaded by the rest of the suite may
    // need more than the default wait, after which a hook would skip (fail open) by design.
    await Deno.mkdir(`${dir}/project/.lifeline`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/project/.lifeline/config.json`,
      JSON.stringify({ hooks: { lockWaitMs: 60_000 } }),
    );
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        runLifeline(["hook", "track"], {
          stdin: JSON.stringify({ ...fail, cwd: `${dir}/project` }),
          env: { HOME: `${dir}/home` },
          timeoutMs: 120_000,
        })),
    );
    let advised = 0;
    for (const result of results) {
      assert.equal(result.code, 0);
      const output = parseHookStdout(result.stdout, "PostToolUseFailure");
      if (output) advised++;
    }
    assert.equal(await Deno.readTextFile(sessionFile(dir, fail, "fail-count-Bash.txt")), "100\n");
    assert.equal(advised, 1);
    assert.deepEqual(await ownLogLines(`${dir}/home`), [], "no update was skipped");
  });
});

Deno.test("--background never waits: a busy counter is skipped and logged, exit 0", async () => {
  await withTempDir(async (dir) => {
    const fail = await failure();
    const count = sessionFile(dir, fail, "fail-count-Bash.txt");
    await Deno.mkdir(`${dir}/project/sessions/${fail.session_id}`, { recursive: true });
    const lock = await Deno.open(`${count}.lock`, { create: true, write: true });
    await lock.lock(true);
    try {
      const started = Date.now();
      const result = await runLifeline(["hook", "track", "--background"], {
        stdin: JSON.stringify({ ...fail, cwd: `${dir}/project` }),
        env: { HOME: `${dir}/home` },
      });
      assert.equal(result.code, 0);
      assert.equal(result.stdout, "");
      assert.ok(Date.now() - started < 1500, "did not wait for the lock");
      assert.match(String((await ownLogLines(`${dir}/home`))[0]?.message), /Could not lock/);
    } finally {
      await lock.unlock();
      lock.close();
    }
  });
});

Deno.test("every track action is logged to logs/error-recovery.log", async () => {
  await withTempDir(async (dir) => {
    const fail = await failure();
    await track(dir, fail);
    await track(dir, fail);
    const log = (await Deno.readTextFile(`${dir}/project/logs/error-recovery.log`)).trim().split(
      "\n",
    )
      .map((line) => JSON.parse(line));
    assert.equal(log.length, 1);
    assert.deepEqual(Object.keys(log[0]).sort(), [
      "action",
      "kind",
      "result",
      "session",
      "target",
      "ts",
    ]);
    assert.equal(log[0].kind, "tool_fallback");
    assert.equal(log[0].target, "Bash");
  });
});

Deno.test("an adversarial MCP error of 1 MB is judged at once (no regex backtracking)", async (t) => {
  const errors = {
    '"server not " repeated': "server not ".repeat(100_000),
    "MCP and 1 MB without disconnect": "MCP " + "x".repeat(1 << 20),
    '"transport " repeated': "transport ".repeat(100_000),
  };
  for (const [name, error] of Object.entries(errors)) {
    await t.step(name, async () => {
      await withTempDir(async (dir) => {
        const fail = {
          ...await hookInput("hh-tool-fail", "PostToolUseFailure"),
          tool_name: "mcp__github__create_issue",
          error,
        };
        const started = Date.now();
        await hook(dir, "track", fail);
        assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
      });
    });
  }
});
