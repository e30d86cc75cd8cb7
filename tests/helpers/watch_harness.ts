/**
 * The watcher in-process, against a real private tmux server (see tmux_harness.ts), with a clock
 * the test moves: no test waits for a real reset or the next minute. Everything it emits and
 * logs is kept for the test to read.
 *
 * @module
 */

import { processKey } from "../../lib/host/proc.ts";
import {
  type PaneEvent,
  type RecoveryEntry,
  tmuxClient,
  type WatchDeps,
  Watcher,
  type WatchNotice,
  type WatchSettings,
} from "../../lib/watch/engine.ts";
import { registeredPanes } from "../../lib/watch/records.ts";
import type { PaneRecord } from "../../lib/watch/watch_policy.ts";
import type { TmuxHarness } from "./tmux_harness.ts";

/** A clock that runs with real time from a chosen start, and jumps when told. */
export interface TestClock {
  now(): number;
  /** Moves the clock forward. */
  advance(ms: number): void;
}

/** A clock starting at `start` (epoch ms). */
export function testClock(start: number): TestClock {
  let offset = start - Date.now();
  return { now: () => Date.now() + offset, advance: (ms) => (offset += ms) };
}

/** Settings for tests: no margin or stagger unless a test asks, quick checks. */
export function testSettings(overrides: Partial<WatchSettings> = {}): WatchSettings {
  return {
    agentCommands: ["claude"],
    resumeText: "continue",
    keyDelayMs: 150,
    verifyDelayMs: 3000,
    staggerMs: 0,
    dryRun: false,
    ...overrides,
    policy: {
      resumeMarginSeconds: 0,
      nativeMarginSeconds: 180,
      transientBackoffSeconds: 120,
      maxAttempts: 3,
      foregroundRetries: 3,
      localZone: "UTC",
      ...overrides.policy,
    },
  };
}

/** A watcher of `tmux`'s server, and what it said and logged. */
export interface WatchRun {
  watcher: Watcher;
  /** What the watcher was given, for a test that wraps a part of it. */
  deps: WatchDeps;
  clock: TestClock;
  events: PaneEvent[];
  logs: { entry: RecoveryEntry; root: string | null }[];
  /** What it told the user (notify). */
  notices: WatchNotice[];
  /** The events about one pane. */
  about(pane: { id: string }): PaneEvent[];
}

/** Builds an in-process watcher for the harness's server. */
export function watchRun(
  tmux: TmuxHarness,
  {
    clock = testClock(Date.now()),
    roots = [],
    settings = testSettings(),
    saved = {},
    vim = false,
    stopping = () => false,
  }: {
    clock?: TestClock;
    roots?: string[];
    settings?: WatchSettings;
    saved?: Record<string, PaneRecord>;
    /** The user's Claude Code edits its prompt vim-style. */
    vim?: boolean;
    /** Whether the watcher has been told to stop (SIGTERM). */
    stopping?: () => boolean;
  } = {},
): WatchRun {
  const events: PaneEvent[] = [];
  const logs: WatchRun["logs"] = [];
  const notices: WatchNotice[] = [];
  const deps: WatchDeps = {
    tmux: tmuxClient({ socketName: tmux.socket }),
    now: clock.now,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    stopping,
    random: () => 0.5,
    emit: (event) => events.push(event),
    sessions: () => registeredPanes(roots),
    log: (entry, root) => {
      logs.push({ entry, root });
      return Promise.resolve();
    },
    processKey,
    notify: (notice) => {
      notices.push(notice);
      return Promise.resolve();
    },
    vimMode: () => Promise.resolve(vim),
  };
  const watcher = new Watcher(deps, settings, saved);
  return {
    watcher,
    deps,
    clock,
    events,
    logs,
    notices,
    about: (pane) => events.filter((e) => e.pane === pane.id),
  };
}
