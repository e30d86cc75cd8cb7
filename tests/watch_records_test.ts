// What a session's own records say, read from the real client's transcripts and StopFailure
// payloads (tests/fixtures/claude-code-2.1.328/), and how `hook track` keeps them for the watcher.
import assert from "node:assert/strict";
import { readTranscriptTail, recordSignal } from "../lib/watch/records_policy.ts";
import { hookCaptures, hookInput, transcriptPath } from "./helpers/fixtures.ts";
import { runLifeline } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

async function fromTranscript(name: string) {
  const lines = (await Deno.readTextFile(transcriptPath(name))).split("\n");
  return recordSignal(null, readTranscriptTail(lines), { localZone: "UTC" });
}

Deno.test("the real transcripts say what ended the turn, and when a limit resets", async (t) => {
  const cases: [string, string, Record<string, unknown>][] = [
    ["screen-429-oauth-stopwait-080x24", "limited", {
      limitKind: "5-hour",
      resetAt: 1796127351000, // rateLimits.resetsAt: an epoch beats parsing "resets 12:15pm"
      native: "cancelled",
    }],
    ["screen-429-oauth-weekly-080x24", "limited", { limitKind: "weekly", native: null }],
    ["screen-429-oauth-080x24", "working", {}], // a newer reply came after the limit
    ["screen-429-oauth-reset-080x24", "working", {}], // the client's own continue went through
    ["screen-429-apikey-080x24", "transient", { error: "rate_limit" }],
    ["screen-429-oauth-throttle-080x24", "transient", { error: "rate_limit" }],
    ["screen-529-080x24", "transient", { error: "server_error" }],
    ["screen-500-080x24", "transient", { error: "server_error" }],
    ["screen-permanent-080x24-1", "permanent", { error: "authentication_failed" }],
    ["screen-permanent-080x24-2", "permanent", { error: "billing_error" }],
    ["screen-permanent-080x24-4", "permanent", {}], // prompt too long
    ["hh-tool-ok", "none", {}],
  ];
  for (const [name, kind, fields] of cases) {
    await t.step(name, async () => {
      const signal = await fromTranscript(name);
      assert.equal(signal.kind, kind);
      for (const [key, value] of Object.entries(fields)) {
        assert.equal((signal as Record<string, unknown>)[key], value, key);
      }
    });
  }
});

Deno.test("a StopFailure the transcript does not show yet is believed; a later reply ends it", () => {
  const stopFailure = {
    ts: "2026-12-01T10:00:00.000Z",
    error: "rate_limit",
    message: "You've hit your 5-hour limit · resets 3pm (UTC)",
  };
  const lagging = readTranscriptTail([]);
  const signal = recordSignal(stopFailure, lagging, { localZone: "UTC" });
  assert.equal(signal.kind, "limited");
  assert.equal(signal.kind === "limited" && signal.resetAt, Date.parse("2026-12-01T15:00:00Z"));
  const replied = readTranscriptTail([
    JSON.stringify({
      type: "assistant",
      timestamp: "2026-12-01T10:05:00.000Z",
      message: { model: "claude-opus-5-5", content: [{ type: "text", text: "Back at it." }] },
    }),
  ]);
  // A reply with no error before it in the tail says nothing on its own; after the error, it does.
  assert.equal(recordSignal(stopFailure, replied, { localZone: "UTC" }).kind, "limited");
  const errorThenReply = readTranscriptTail([
    JSON.stringify({
      type: "assistant",
      isApiErrorMessage: true,
      error: "rate_limit",
      timestamp: "2026-12-01T10:00:00.000Z",
      message: { model: "<synthetic>", content: [{ type: "text", text: stopFailure.message }] },
    }),
    "{not json, a torn line",
    JSON.stringify({
      type: "user",
      timestamp: "2026-12-01T15:02:00.000Z",
      message: { content: "continue" },
    }),
  ]);
  assert.deepEqual(recordSignal(stopFailure, errorThenReply, { localZone: "UTC" }), {
    kind: "working",
    at: Date.parse("2026-12-01T15:02:00.000Z"),
  });
});

Deno.test({
  name: "hook track keeps the StopFailure for the watcher, and Stop clears it",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const input = await hookInput("screen-429-oauth-080x24", "StopFailure");
      const root = `${dir}/project`;
      await Deno.mkdir(root);
      const env = { HOME: dir, LIFELINE_ROOT: root };
      const failed = await runLifeline(["hook", "track"], { stdin: JSON.stringify(input), env });
      assert.equal(failed.code, 0, failed.stderr);
      assert.equal(failed.stdout, "");
      const path = `${root}/sessions/${input.session_id}/stop-failure.json`;
      const kept = JSON.parse(await Deno.readTextFile(path));
      assert.equal(kept.error, "rate_limit");
      assert.match(kept.message, /^You've hit your 5-hour limit · resets 12:08pm \(UTC\)$/);
      const stop = (await hookCaptures("hh-text")).find((c) => c.event === "Stop")!.input;
      const stopped = await runLifeline(["hook", "track"], {
        stdin: JSON.stringify({ ...stop, session_id: input.session_id }),
        env,
      });
      assert.equal(stopped.code, 0, stopped.stderr);
      await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
    });
  },
});
