/**
 * The real Claude Code 2.1.328 captures in tests/fixtures/ (see its README).
 *
 * @module
 */

import { REPO_DIR } from "./lifeline.ts";

/** Where the captures live. */
export const FIXTURE_DIR = `${REPO_DIR}/tests/fixtures/claude-code-2.1.328`;

/** One captured hook call: what the hook command received. */
export interface HookCapture {
  ts: string;
  event: string;
  env: Record<string, string>;
  input: Record<string, unknown> & { session_id: string; hook_event_name: string };
}

/** The captures of one scenario file in hooks/, e.g. `hh-tool-fail`. */
export async function hookCaptures(scenario: string): Promise<HookCapture[]> {
  const text = await Deno.readTextFile(`${FIXTURE_DIR}/hooks/${scenario}.jsonl`);
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}

/** The input of the first `event` in a scenario; throws if the scenario has none. */
export async function hookInput(
  scenario: string,
  event: string,
): Promise<HookCapture["input"]> {
  const found = (await hookCaptures(scenario)).find((capture) => capture.event === event);
  if (!found) throw new Error(`no ${event} in ${scenario}`);
  return found.input;
}

/** Every scenario name in hooks/. */
export async function hookScenarios(): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(`${FIXTURE_DIR}/hooks`)) {
    if (entry.name.endsWith(".jsonl")) names.push(entry.name.slice(0, -".jsonl".length));
  }
  return names.sort();
}

/** A screen capture's text, from screens/. */
export function screen(name: string): Promise<string> {
  return Deno.readTextFile(`${FIXTURE_DIR}/screens/${name}.txt`);
}

/** The path of a transcript capture, from transcripts/. */
export function transcriptPath(name: string): string {
  return `${FIXTURE_DIR}/transcripts/${name}.jsonl`;
}
