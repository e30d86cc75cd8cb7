/**
 * The loop harness's state for `status`: the open circuit breakers
 * (`.EnjoyHarness/.circuit-breaker-task-*`) and the global iteration budget.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { harnessPaths } from "../state/layout.ts";
import { listNames, readStateText } from "../state/store.ts";
import { peekState } from "./files.ts";

/** Breakers and the iteration budget; `iterations` is null without a harness. */
export interface HarnessStatus {
  breakers: { task: string; triggered_at: string | null; error_count: number | null }[];
  iterations: { current: number; max: number } | null;
}

/** Reads the harness of `root`, changing nothing. */
export async function harnessStatus(root: string): Promise<HarnessStatus> {
  const breakers: HarnessStatus["breakers"] = [];
  const harness = harnessPaths(root);
  for (const name of await listNames(harness.dir)) {
    const task = /^\.circuit-breaker-task-(.+)$/.exec(name)?.[1];
    if (!task) continue;
    const text = await readStateText(joinPath(harness.dir, name), { root }).catch(() => "");
    breakers.push({
      task,
      triggered_at: /^triggered_at: (.+)$/m.exec(text)?.[1] ?? null,
      error_count: Number(/^error_count: (\d+)$/m.exec(text)?.[1] ?? NaN) || null,
    });
  }
  const state = await peekState(root).catch(() => null);
  return {
    breakers,
    iterations: state && { current: state.current_iteration, max: state.max_iterations },
  };
}
