/**
 * The loop harness files of spec/handle-failure.md on disk: `.EnjoyHarness/` (GLOBAL_STATE.md,
 * EVENT_LOG.md, ITERATION_COUNTER.md, SKILL_REGISTRY.md, EXECUTION_CONTRACT.md,
 * `.circuit-breaker-task-<ID>`) and `.trace/` (ERROR_TRACE.md, FAILURE_REPORT_<ID>.md). The
 * numbers live in `.EnjoyHarness/handle-failure.json` and are rendered into the markdown
 * (`records.ts`), so harness users find the specification's headings and fields.
 *
 * @module
 */

import * as z from "zod";
import { lazy } from "../core/lazy.ts";
import { harnessPaths } from "../state/layout.ts";
import { CliError } from "../core/cli.ts";
import { relativeTo } from "../core/path.ts";
import type { HarnessCounts, HarnessEvent } from "./breaker_policy.ts";
import {
  type EngineEvent,
  eventLine,
  type Language,
  renderGlobalState,
  renderIterationCounter,
} from "./records.ts";
import {
  appendText,
  ensureDir,
  jsonCodec,
  readState,
  readStateText,
  stateFileExists,
  writeFileAtomic,
} from "../state/store.ts";

/** The JSON source of truth. */
export interface HarnessState extends HarnessCounts {
  version: 1;
}

const stateSchema = lazy(() =>
  z.looseObject({
    version: z.literal(1),
    skills: z.record(z.string(), z.number()),
    tasks: z.record(z.string(), z.number()),
    current_iteration: z.number(),
    max_iterations: z.number(),
    failure_records: z.number(),
    recent_events: z.array(z.string()),
  })
);

/** Codec for `handle-failure.json`. */
export const harnessStateCodec = jsonCodec<HarnessState>((value) =>
  stateSchema().parse(value) as HarnessState
);

/** The harness a fresh `fail init` creates. */
export function emptyHarnessState(maxIterations: number): HarnessState {
  return {
    version: 1,
    skills: {},
    tasks: {},
    current_iteration: 0,
    max_iterations: maxIterations,
    failure_records: 0,
    recent_events: [],
  };
}

/** The files `fail handle` needs, relative to the root. */
export function requiredFiles(root: string): string[] {
  const p = harnessPaths(root);
  return [p.skillRegistry, p.contract, p.globalState, p.eventLog, p.iterationCounter, p.errorTrace];
}

const BREAKER_SKILL = "harness-enable-circuit-breaker";
const THIS_SKILL = "harness-handle-failure";

/** True when SKILL_REGISTRY.md marks the circuit-breaker skill done (`- [x] harness-enable-…`). */
export function circuitBreakerEnabled(registry: string): boolean {
  return new RegExp(`^\\s*[-*]\\s*\\[[xX]\\]\\s*${BREAKER_SKILL}\\b`, "m").test(registry);
}

/** The contract's `human_escalation_policy` (default `true_blockers_only`). */
export function escalationPolicy(contract: string): string {
  return /human_escalation_policy:\s*([A-Za-z_]+)/.exec(contract)?.[1] ?? "true_blockers_only";
}

/** SKILL_REGISTRY.md with this skill marked done (the line edited in place, or added). */
export function markSkillDone(registry: string): string {
  const line = `- [x] ${THIS_SKILL} - 失败处理技能 ✅`;
  const existing = new RegExp(`^\\s*[-*]\\s*\\[[ xX]\\]\\s*${THIS_SKILL}\\b.*$`, "m");
  if (existing.test(registry)) return registry.replace(existing, line);
  return `${registry.replace(/\n*$/, "")}\n${line}\n`;
}

/** Creates the harness files that are missing. Returns what it created and what it kept. */
export async function initHarness(
  root: string,
  { maxIterations, threshold, lang }: { maxIterations: number; threshold: number; lang: Language },
): Promise<{ created: string[]; kept: string[] }> {
  const p = harnessPaths(root);
  await ensureDir(p.dir, { root });
  await ensureDir(p.trace, { root });
  const files: [string, () => string][] = [
    [p.contract, () => "# Execution Contract\n\nhuman_escalation_policy: true_blockers_only\n"],
    [
      p.skillRegistry,
      () =>
        "# Skill Registry\n\n- [x] harness-init - 初始化 ✅\n" +
        `- [x] ${BREAKER_SKILL} - 熔断机制 ✅\n- [ ] ${THIS_SKILL} - 失败处理技能\n`,
    ],
    [p.eventLog, () => "# Event Log\n\n"],
    [p.errorTrace, () => "# Error Trace\n"],
    [p.iterationCounter, () => renderIterationCounter(emptyHarnessState(maxIterations))],
    [
      p.globalState,
      () => renderGlobalState("", emptyHarnessState(maxIterations), { threshold, lang }),
    ],
    [p.state, () => harnessStateCodec.format(emptyHarnessState(maxIterations))],
  ];
  const created: string[] = [];
  const kept: string[] = [];
  for (const [path, content] of files) {
    if (stateFileExists(path, { root })) {
      kept.push(path);
    } else {
      await writeFileAtomic(path, content(), { root });
      created.push(path);
    }
  }
  return { created, kept };
}

/**
 * The state for a harness that has markdown but no JSON yet (made by other tools): its iteration
 * counter's `key: value` lines are imported once. Counts start at zero.
 */
export function importState(iterationCounter: string, defaultMax: number): HarnessState {
  const value = (key: string) => {
    const match = new RegExp(`^\\s*${key}:\\s*(\\d+)`, "m").exec(iterationCounter);
    return match ? Number(match[1]) : undefined;
  };
  return {
    ...emptyHarnessState(value("max_iterations") ?? defaultMax),
    current_iteration: value("current_iteration") ?? 0,
  };
}

/** Settings for writing the harness files. */
export interface HarnessFormat {
  threshold: number;
  lang: Language;
}

/** Exits 1 naming the fix unless the harness is set up and its breaker skill is enabled. */
export async function checkPreconditions(root: string): Promise<void> {
  for (const path of requiredFiles(root)) {
    if (!stateFileExists(path, { root })) {
      throw new CliError(
        `the harness is not set up: ${relativeTo(root, path)} is missing`,
        "run `lifeline fail init` first",
      );
    }
  }
  const registry = await readStateText(harnessPaths(root).skillRegistry, { root });
  if (!circuitBreakerEnabled(registry)) {
    throw new CliError(
      "the circuit breaker is not enabled (熔断机制未启用): .EnjoyHarness/SKILL_REGISTRY.md does not " +
        "mark harness-enable-circuit-breaker done",
      "run `lifeline fail init`, or mark it: - [x] harness-enable-circuit-breaker",
    );
  }
}

/** The state: the JSON, or (once) imported from a harness another tool made. */
export async function loadState(root: string, maxIterations: number): Promise<HarnessState> {
  const p = harnessPaths(root);
  const result = await readState(p.state, harnessStateCodec, { root });
  if (result.kind === "ok") return result.value;
  if (result.kind === "corrupt") {
    throw new CliError(
      `${p.state} is not valid (${result.reason})`,
      "fix it, or move it aside to rebuild it from the markdown",
    );
  }
  return importState(await readStateText(p.iterationCounter, { root }), maxIterations);
}

/** The state, an existing harness's (null when there is none). */
export async function peekState(root: string): Promise<HarnessState | null> {
  const result = await readState(harnessPaths(root).state, harnessStateCodec, { root });
  return result.kind === "ok" ? result.value : null;
}

/** Writes the state and the markdown rendered from it. */
export async function saveState(
  root: string,
  state: HarnessState,
  f: HarnessFormat,
): Promise<void> {
  const p = harnessPaths(root);
  await writeFileAtomic(p.state, harnessStateCodec.format(state), { root });
  await writeFileAtomic(p.iterationCounter, renderIterationCounter(state), { root });
  const global = await readStateText(p.globalState, { root }).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return "";
    throw error;
  });
  await writeFileAtomic(p.globalState, renderGlobalState(global, state, f), { root });
  const registry = await readStateText(p.skillRegistry, { root });
  await writeFileAtomic(p.skillRegistry, markSkillDone(registry), { root });
}

/** Appends lines to EVENT_LOG.md (one write). */
export async function appendEvents(
  root: string,
  events: (HarnessEvent | EngineEvent)[],
  lang: Language,
): Promise<void> {
  if (events.length === 0) return;
  const text = events.map((e) => eventLine(e, lang)).join("\n") + "\n";
  await appendText(harnessPaths(root).eventLog, text, { root });
}

/** The skill a task's breaker file names, or null. */
export async function breakerSkill(root: string, task: string): Promise<string | null> {
  const text = await readStateText(harnessPaths(root).breaker(task), { root }).catch(() => "");
  return /^skill_name: (\S+)$/m.exec(text)?.[1] ?? null;
}
