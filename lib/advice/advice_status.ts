/**
 * What waits in a project's sessions for `status`: tools at the fallback threshold (their
 * consecutive-failure counts) and advice in the outboxes, not yet delivered.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { sessionPaths } from "../state/layout.ts";
import { listNames, numberCodec, readState } from "../state/store.ts";
import { peekAdvice } from "./outbox.ts";

/** Advice and failing tools, per session. */
export interface AdviceStatus {
  tools_over_threshold: { session: string; tool: string; failures: number }[];
  outbox: { session: string; advice: string[] }[];
}

/** Reads the counters and outboxes of `sessions` (a finished session's are never read again). */
export async function adviceStatus(
  root: string,
  sessions: readonly string[],
  { threshold }: { threshold: number },
): Promise<AdviceStatus> {
  const status: AdviceStatus = { tools_over_threshold: [], outbox: [] };
  for (const id of sessions) {
    const dir = sessionPaths(root, id).dir;
    for (const name of await listNames(dir)) {
      const tool = /^fail-count-(.+)\.txt$/.exec(name)?.[1];
      if (!tool) continue;
      const count = await readState(joinPath(dir, name), numberCodec, { root })
        .catch(() => undefined);
      if (count?.kind === "ok" && count.value >= threshold) {
        status.tools_over_threshold.push({ session: id, tool, failures: count.value });
      }
    }
    const advice = await peekAdvice(root, id).catch(() => []);
    if (advice.length > 0) status.outbox.push({ session: id, advice: advice.map((a) => a.text) });
  }
  return status;
}
