// The screen reader against the labelled corpus (tests/fixtures/screens/): real renders of the
// client at 60 to 200 columns, with and without status lines, and screens from other resumers'
// test suites and public issue reports. `deno task fidelity` prints the same score in full.
import assert from "node:assert/strict";
import { readScreen } from "../lib/claude/screen.ts";
import { loadCorpus, scoreCorpus } from "./helpers/corpus.ts";

/**
 * Screens the reader reads otherwise than their label, each on the safe side (it does not type
 * there). A miss not listed fails the test; a listed one that is read right again must be
 * removed from the list.
 */
const KNOWN_MISSES: Record<string, string> = {
  "probe/shared-screen-trust-no-02-after-no.txt":
    "the client exited under a stale trust dialog; read as the dialog (nothing is typed)",
  "public/claude-auto-retry-companion-only.txt":
    "a limit notice hanging under a tool's summary reads as that tool's output (nothing is typed)",
  // Other resumers' strings, not renders: the 2.1.328 client draws a box only around a reply's
  // table or block, so a banner in a box is a quote (probe/assistant-table-with-banner-080x24).
  "public/claude-auto-retry-boxed-banner.txt":
    "a banner in a box is read as quoted text, as the real client's boxes are (nothing is typed)",
  "public/herdr-boxed-limit-menu.txt":
    "a limit menu in a box is read as a prompt, not as the client's menu (nothing is typed)",
};

const corpus = await loadCorpus();
const score = scoreCorpus(corpus);

Deno.test("the corpus holds at least 150 labelled screens, from real renders and public sources", () => {
  assert.ok(score.total >= 150, `${score.total}`);
  assert.ok(corpus.some((c) => c.file.startsWith("probe/")) && corpus.some((c) => c.cite));
  for (const c of corpus.filter((c) => c.file.startsWith("public/"))) assert.ok(c.cite, c.file);
});

Deno.test("no screen of the corpus gets a keystroke its label calls unsafe", () => {
  assert.deepEqual(score.unsafe.map((r) => `${r.case.file} (${r.rule})`), []);
});

Deno.test("every screen of the corpus is read as labelled, but the known misses", () => {
  const misses = score.results.filter((r) => r.state !== r.case.state);
  assert.deepEqual(
    misses.map((r) => `${r.case.file}: labelled ${r.case.state}, read ${r.state} (${r.rule})`)
      .filter((line) => !Object.hasOwn(KNOWN_MISSES, line.split(":")[0]!)),
    [],
  );
  for (const file of Object.keys(KNOWN_MISSES)) {
    assert.ok(misses.some((r) => r.case.file === file), `${file} is read right now: unlist it`);
  }
  assert.ok(score.correct / score.total >= 0.98, `accuracy ${score.correct}/${score.total}`);
});

Deno.test("the input box is read as the label says: empty, holding text, or not there", () => {
  // A dialog or menu takes the keys, whatever input box stands under it: never idle.
  const wrong = corpus.filter((c) =>
    !["dangerous_prompt", "limit_menu"].includes(c.state) && readScreen(c.text).idle !== c.idle
  );
  assert.deepEqual(wrong.map((c) => `${c.file}: label idle ${c.idle}`), []);
});
