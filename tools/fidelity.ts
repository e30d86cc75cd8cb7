/**
 * `deno task fidelity`: how well the watcher reads the labelled screen corpus
 * (tests/fixtures/screens/): per-state precision and recall, overall accuracy, and the count of
 * unsafe decisions (a keystroke where the label says typing is not safe). `--misses` lists every
 * case read wrong.
 *
 * @module
 */

import { loadCorpus, scoreCorpus } from "../tests/helpers/corpus.ts";

const score = scoreCorpus(await loadCorpus());
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const lines = [
  "state                 labelled   read  precision  recall",
  ...Object.entries(score.perState).map(([state, s]) =>
    `${state.padEnd(20)} ${String(s.labelled).padStart(9)} ${String(s.read).padStart(6)} ${
      pct(s.precision).padStart(10)
    } ${pct(s.recall).padStart(7)}`
  ),
];
if (Deno.args.includes("--misses")) {
  for (
    const r of score.results.filter((r) => r.state !== r.case.state || (r.types && !r.case.safe))
  ) {
    lines.push(
      `miss: ${r.case.file}: labelled ${r.case.state}, read ${r.state} (${r.rule})` +
        (r.types && !r.case.safe ? " UNSAFE" : ""),
    );
  }
}
const safe = score.results.filter((r) => r.case.safe);
lines.push(
  `resumes: ${
    safe.filter((r) => r.types).length
  } of ${safe.length} screens labelled safe would be typed into`,
);
lines.push(
  `accuracy ${
    pct(score.correct / score.total)
  } (${score.correct}/${score.total}), unsafe ${score.unsafe.length}`,
);
// A report tool: its output is the point.
// deno-lint-ignore no-console
console.log(lines.join("\n"));
