/**
 * `doctor`'s checks, as a list: each a small named function over shared facts, run in order.
 * Adding a check is writing one {@linkcode DoctorCheck} and putting it in {@linkcode CHECKS}.
 *
 * @module
 */

import { type Check, type DoctorCheck, doctorFacts, type DoctorInput } from "./check.ts";
import {
  configCheck,
  gitCheck,
  selfHealCheck,
  stateCheck,
  tmuxCheck,
  watchersCheck,
} from "./doctor_host.ts";
import { binaryCheck, hooksCheck, matchersCheck, settingsCheck } from "./doctor_settings.ts";
import { claimsCheck, corruptCheck, harnessCheck } from "./doctor_state.ts";

/** Every check, in the order `doctor` prints them. */
export const CHECKS: readonly DoctorCheck[] = [
  settingsCheck,
  hooksCheck,
  matchersCheck,
  binaryCheck,
  tmuxCheck,
  stateCheck,
  gitCheck,
  configCheck,
  selfHealCheck,
  watchersCheck,
  corruptCheck,
  claimsCheck,
  harnessCheck,
];

/** Runs every check; the results in order. */
export async function runChecks(
  input: DoctorInput,
  checks: readonly DoctorCheck[] = CHECKS,
): Promise<Check[]> {
  const facts = doctorFacts(input);
  const results: Check[] = [];
  for (const check of checks) results.push(...await check.run(facts));
  return results;
}

/** The checks as `--help` lists them: name, then summary (indented under its first line). */
export function checksHelp(): string {
  const width = Math.max(...CHECKS.map((c) => c.name.length)) + 2;
  return CHECKS.map((c) =>
    `  ${c.name.padEnd(width)} ${c.summary.replaceAll("\n", `\n  ${"".padEnd(width)} `)}`
  ).join("\n");
}
