import assert from "node:assert/strict";
import { absolutePath, joinPath } from "../lib/core/path.ts";
import {
  claudeConfigDir,
  InvalidNameError,
  killSwitchPath,
  MAX_NAME_LENGTH,
  ownLogPath,
  projectPaths,
  resolveHookRoot,
  sessionPaths,
  stateDir,
  userConfigPath,
  validateName,
} from "../lib/state/layout.ts";

Deno.test("validateName accepts ids, tool names and MCP names", () => {
  for (
    const name of [
      "269ea2ac-65ad-4f70-a7cd-05c8758f3e37",
      "Bash",
      "mcp__firecrawl__scrape",
      "a.b_c-1",
    ]
  ) {
    assert.equal(validateName("session id", name), name);
  }
});

Deno.test("validateName rejects what could escape a directory, with a clear message", () => {
  const bad: unknown[] = [
    "../x",
    "a/b",
    "a\\b",
    "",
    ".",
    "..",
    "x".repeat(MAX_NAME_LENGTH + 1),
    "a b",
    "é",
    42,
    null,
  ];
  for (const value of bad) {
    assert.throws(() => validateName("session id", value), InvalidNameError, String(value));
  }
  assert.throws(
    () => validateName("task id", "../x"),
    { message: `Invalid task id "../x": only letters, digits, '.', '_' and '-' are allowed` },
  );
  assert.throws(() => validateName("tool name", ""), {
    message: `Invalid tool name "": it is empty`,
  });
});

Deno.test("sessionPaths validates before building any path", () => {
  assert.throws(() => sessionPaths("/p", "../../etc"), InvalidNameError);
  const paths = sessionPaths("/p", "abc");
  assert.equal(paths.heartbeat, "/p/sessions/abc/heartbeat");
  assert.equal(paths.session, "/p/sessions/abc/session.json");
  assert.equal(paths.scavenged, "/p/sessions/abc/handoffs/scavenged.md");
  assert.equal(paths.mcpRetry("mcp__srv__tool"), "/p/sessions/abc/mcp-retry-mcp__srv__tool.json");
  assert.equal(paths.failCount("Bash"), "/p/sessions/abc/fail-count-Bash.txt");
  assert.throws(() => paths.failCount("../Bash"), InvalidNameError);
});

Deno.test("projectPaths follows the specification's layout", () => {
  const p = projectPaths("/proj");
  assert.equal(p.currentPlan, "/proj/.working-state/current-plan.md");
  assert.equal(p.fallbackTools, "/proj/.working-state/fallback-tools.md");
  assert.equal(p.claims, "/proj/.claims");
  assert.equal(p.recoveryLog, "/proj/logs/error-recovery.log");
  assert.equal(p.harness, "/proj/.EnjoyHarness");
  assert.equal(p.trace, "/proj/.trace");
  assert.equal(p.config, "/proj/.lifeline/config.json");
});

Deno.test("resolveHookRoot: --root, then LIFELINE_ROOT, then CLAUDE_PROJECT_DIR, then the input's cwd", () => {
  const env = { LIFELINE_ROOT: "/lr", CLAUDE_PROJECT_DIR: "/cpd" };
  assert.equal(resolveHookRoot({ flag: "/f", env, inputCwd: "/c", cwd: "/w" }), "/f");
  assert.equal(resolveHookRoot({ env, inputCwd: "/c", cwd: "/w" }), "/lr");
  assert.equal(
    resolveHookRoot({ env: { CLAUDE_PROJECT_DIR: "/cpd" }, inputCwd: "/c", cwd: "/w" }),
    "/cpd",
  );
  assert.equal(resolveHookRoot({ env: {}, inputCwd: "/c", cwd: "/w" }), "/c");
  assert.equal(resolveHookRoot({ flag: "rel/dir", env: {}, cwd: "/w" }), "/w/rel/dir");
  assert.throws(() => resolveHookRoot({ env: {}, cwd: "/w" }));
  assert.throws(
    () => resolveHookRoot({ env: {}, inputCwd: "proj", cwd: "/w" }),
    /the input's cwd is not absolute: proj/,
  );
});

Deno.test("per-user locations honour CLAUDE_CONFIG_DIR, XDG and LIFELINE_STATE_DIR", () => {
  assert.equal(claudeConfigDir({ HOME: "/h" }), "/h/.claude");
  assert.equal(killSwitchPath({ HOME: "/h", CLAUDE_CONFIG_DIR: "/cc" }), "/cc/self-heal.off");
  assert.equal(userConfigPath({ HOME: "/h" }), "/h/.config/lifeline/config.json");
  assert.equal(userConfigPath({ HOME: "/h", XDG_CONFIG_HOME: "/x" }), "/x/lifeline/config.json");
  assert.equal(stateDir({ HOME: "/h" }), "/h/.local/state/lifeline");
  assert.equal(stateDir({ HOME: "/h", XDG_STATE_HOME: "/s" }), "/s/lifeline");
  assert.equal(ownLogPath({ HOME: "/h", LIFELINE_STATE_DIR: "/ls" }), "/ls/lifeline.log");
});

Deno.test("joinPath and absolutePath", () => {
  assert.equal(joinPath("/a/", "b", "", "c"), "/a/b/c");
  assert.equal(absolutePath("x", "/base"), "/base/x");
  assert.equal(absolutePath("/x", "/base"), "/x");
  assert.equal(absolutePath("C:\\x", "/base"), "C:\\x");
  assert.equal(absolutePath(".", "/base"), "/base", "`--root .` names the directory itself");
  assert.equal(absolutePath("./x", "/base"), "/base/x");
  assert.equal(absolutePath("././x/y", "/base"), "/base/x/y");
});
