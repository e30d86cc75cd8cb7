/**
 * Every module lifeline imports by a computed specifier (`importLater` in lib/core/lazy.ts), named
 * here literally, so that `deno compile --include commands` bundles it (deno.json, release.yml):
 * the compiler cannot see a computed specifier. Nothing imports this file at run time;
 * tests/hook_hot_path_test.ts checks that it names every such module (the command modules, in
 * this folder, are bundled anyway).
 *
 * @module
 */

/** The modules, by path. */
export const LAZY_MODULES = {
  "lib/advice/fallback_map.ts": () => import("../lib/advice/fallback_map.ts"),
  "lib/advice/mcp_retry_policy.ts": () => import("../lib/advice/mcp_retry_policy.ts"),
  "lib/advice/model_fallback.ts": () => import("../lib/advice/model_fallback.ts"),
  "lib/advice/tool_fallback.ts": () => import("../lib/advice/tool_fallback.ts"),
  "lib/claude/patterns.ts": () => import("../lib/claude/patterns.ts"),
  "lib/core/flags.ts": () => import("../lib/core/flags.ts"),
  "lib/core/json_text.ts": () => import("../lib/core/json_text.ts"),
  "lib/core/shape_zod.ts": () => import("../lib/core/shape_zod.ts"),
  "lib/core/suggest.ts": () => import("../lib/core/suggest.ts"),
  "lib/host/proc.ts": () => import("../lib/host/proc.ts"),
  "lib/host/process.ts": () => import("../lib/host/process.ts"),
  "lib/sessions/liveness.ts": () => import("../lib/sessions/liveness.ts"),
  "lib/sessions/prune.ts": () => import("../lib/sessions/prune.ts"),
  "lib/state/config.ts": () => import("../lib/state/config.ts"),
  "lib/state/config_schema.ts": () => import("../lib/state/config_schema.ts"),
  "lib/state/own_log.ts": () => import("../lib/state/own_log.ts"),
  "lib/state/recovery_log.ts": () => import("../lib/state/recovery_log.ts"),
};
