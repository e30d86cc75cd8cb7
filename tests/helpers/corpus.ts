/**
 * The labelled screen corpus (tests/fixtures/screens/, see its README): real renders of the
 * client at several widths, with and without status lines, and screens from other resumers' test
 * suites and public issue reports. Each case says what the screen shows and whether a resume
 * keystroke would be safe there. `scoreCorpus` reads every case the way the watcher does and
 * compares.
 *
 * @module
 */

import { lastLinesRefusal, type PaneState, readScreen } from "../../lib/claude/screen.ts";
import { keystrokeRefusal } from "../../lib/watch/watch_policy.ts";
import { REPO_DIR } from "./lifeline.ts";

/** Where the corpus lives. */
export const CORPUS_DIR = `${REPO_DIR}/tests/fixtures/screens`;

/** One labelled screen. */
export interface CorpusCase {
  file: string;
  state: PaneState;
  idle: boolean;
  safe: boolean;
  reset?: string;
  source: string;
  cite: string | null;
  note: string;
}

/** Every case of the corpus, with its screen's text. */
export async function loadCorpus(): Promise<(CorpusCase & { text: string })[]> {
  const index: CorpusCase[] = JSON.parse(await Deno.readTextFile(`${CORPUS_DIR}/index.json`));
  return await Promise.all(index.map(async (c) => ({
    ...c,
    text: await Deno.readTextFile(`${CORPUS_DIR}/${c.file}`),
  })));
}

/** What the watcher makes of one case. */
export interface CaseResult {
  case: CorpusCase;
  state: PaneState;
  rule: string;
  /** The watcher would send a keystroke here (once the reset has passed). */
  types: boolean;
}

/**
 * Whether the watcher would type into this screen once its reset had passed: the screen means a
 * resume, and the last look before the keystroke lets it through.
 */
export function wouldType(text: string): boolean {
  const reading = readScreen(text);
  const resumable = reading.state === "usage_limit" || reading.state === "transient_api_error" ||
    (reading.state === "limit_menu" && reading.keys === "enter");
  const safeLimitMenu = reading.state === "limit_menu" && reading.keys === "enter";
  if (!resumable || lastLinesRefusal(text, { safeLimitMenu })) return false;
  return keystrokeRefusal(reading, { expect: "", keys: reading.keys ?? "text" }) === null;
}

/** Per-state precision and recall, accuracy, and unsafe decisions over the corpus. */
export interface CorpusScore {
  results: CaseResult[];
  total: number;
  correct: number;
  /** Keystrokes the watcher would send where the label says it is not safe. */
  unsafe: CaseResult[];
  perState: Record<string, { precision: number; recall: number; labelled: number; read: number }>;
}

/** Reads every case and scores the reader against the labels. */
export function scoreCorpus(cases: readonly (CorpusCase & { text: string })[]): CorpusScore {
  const results = cases.map((c) => {
    const reading = readScreen(c.text);
    return { case: c, state: reading.state, rule: reading.rule, types: wouldType(c.text) };
  });
  const states = [...new Set([...results.map((r) => r.case.state), ...results.map((r) => r.state)])]
    .sort();
  const perState: CorpusScore["perState"] = {};
  for (const state of states) {
    const labelled = results.filter((r) => r.case.state === state);
    const read = results.filter((r) => r.state === state);
    const hits = read.filter((r) => r.case.state === state).length;
    perState[state] = {
      precision: read.length === 0 ? 1 : hits / read.length,
      recall: labelled.length === 0 ? 1 : hits / labelled.length,
      labelled: labelled.length,
      read: read.length,
    };
  }
  return {
    results,
    total: results.length,
    correct: results.filter((r) => r.state === r.case.state).length,
    unsafe: results.filter((r) => r.types && !r.case.safe),
    perState,
  };
}
