/**
 * Keeping lifeline's per-session state out of commits: one marked block of patterns in the
 * repository's `info/exclude` (a worktree's too: git reads the common directory's), so that an
 * agent's `git add -A` never commits heartbeats; the project's `.gitignore` only when asked, since
 * that file is tracked and shared. And the check `doctor` makes: state that git tracks, or would
 * not ignore.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { git, repoTop } from "../host/git.ts";
import { runProgram } from "../host/process.ts";
import { readStateText, writeFileAtomic } from "../state/store.ts";

/**
 * lifeline's per-session state, as gitignore patterns relative to the project root (README,
 * "Where state lives"). Not the files users and their loops own (`ralph.json`, `.claims/`,
 * `.working-state/`, the harness and its trace), and not `.lifeline/config.json`, which a team
 * may share.
 */
export const STATE_PATTERNS: readonly string[] = [
  "sessions/*/heartbeat",
  "sessions/*/session.json",
  "sessions/*/status",
  "sessions/*/finished",
  "sessions/*/outbox.jsonl",
  "sessions/*/events.jsonl",
  "sessions/*/stop-failure.json",
  "sessions/*/failure-tracker.json",
  "sessions/*/mcp-retry-*.json",
  "sessions/*/fail-count-*.txt",
  "sessions/*/handoffs/",
  "sessions/**/*.lock",
  "sessions/**/*.corrupt-*",
  "sessions/**/.*.tmp",
  "logs/error-recovery.log",
  "logs/*.lock",
  ".lifeline/*",
  "!.lifeline/config.json",
];

const BEGIN_MARK = "# lifeline: begin";
const BEGIN = `${BEGIN_MARK} (its per-session state; written by \`lifeline init\`)`;
const END = "# lifeline: end";

/** The marked block, its patterns anchored at `prefix` (the root's path below the file's dir). */
export function excludeBlock(prefix: string): string {
  const anchored = STATE_PATTERNS.map((p) =>
    p.startsWith("!") ? `!/${prefix}${p.slice(1)}` : `/${prefix}${p}`
  );
  return [BEGIN, ...anchored, END].join("\n") + "\n";
}

/**
 * `text` with its lifeline block (from a line starting `# lifeline: begin` to `# lifeline: end`,
 * whatever an older version wrote between) replaced by `block`, or `block` appended.
 */
export function withBlock(text: string, block: string): string {
  const lines = text.split("\n");
  const start = lines.findIndex((line) => line.startsWith(BEGIN_MARK));
  const end = start < 0 ? -1 : lines.indexOf(END, start);
  if (end >= 0) {
    return [...lines.slice(0, start), block.trimEnd(), ...lines.slice(end + 1)].join("\n");
  }
  return text + (text === "" || text.endsWith("\n") ? "" : "\n") + block;
}

/** Where the block goes for a root, or null outside git. */
export interface ExcludeTarget {
  /** The file: `<common dir>/info/exclude`, or the root's `.gitignore`. */
  file: string;
  /** The root's path below the file's directory (`` or `packages/app/`). */
  prefix: string;
  /** The directory the store may not escape: the common dir (info/ may be missing), or the root. */
  within: string;
}

/** The exclude file of the repository holding `root` (or its `.gitignore`), or null. */
export async function excludeTarget(
  root: string,
  { gitignore }: { gitignore: boolean },
): Promise<ExcludeTarget | null> {
  if (!(await repoTop(root))) return null;
  if (gitignore) return { file: joinPath(root, ".gitignore"), prefix: "", within: root };
  const [common, prefix = ""] = (await git(root, [
    "rev-parse",
    "--path-format=absolute",
    "--git-common-dir",
    "--show-prefix",
  ])).split("\n");
  return { file: joinPath(common!, "info", "exclude"), prefix, within: common! };
}

/** What {@linkcode keepStateOutOfGit} did: the file, and whether it changed (or would). */
export interface ExcludeResult {
  file: string;
  changed: boolean;
}

/** Adds (or brings up to date) the block for `root`. Null outside git. */
export async function keepStateOutOfGit(
  root: string,
  { gitignore, dryRun }: { gitignore: boolean; dryRun: boolean },
): Promise<ExcludeResult | null> {
  const target = await excludeTarget(root, { gitignore });
  if (!target) return null;
  const within = { root: target.within };
  const text = await readStateText(target.file, within).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return "";
    throw error;
  });
  const next = withBlock(text, excludeBlock(target.prefix));
  const changed = next !== text;
  if (changed && !dryRun) {
    const mode = await Deno.stat(target.file).then((s) => (s.mode ?? 0o644) & 0o7777, () => 0o644);
    await writeFileAtomic(target.file, next, { ...within, mode });
  }
  return { file: target.file, changed };
}

/** What git makes of lifeline's state under a root. */
export interface GitStateReport {
  /** State files git tracks (root-relative), at most `limit`, and how many there are. */
  tracked: string[];
  trackedCount: number;
  /** Example state paths git would not ignore (a `git add -A` would commit them). */
  unignored: string[];
}

/** Tracked and unignored lifeline state under `root`, or null outside git. */
export async function gitStateReport(root: string, limit = 5): Promise<GitStateReport | null> {
  if (!(await repoTop(root))) return null;
  const tracked = (await git(root, ["ls-files", "-z", "--", ...STATE_PATTERNS.map(pathspec)]))
    .split("\0").filter(Boolean);
  const samples = STATE_PATTERNS.filter((p) => !p.startsWith("!")).map(sample);
  const checked = await runProgram("git", ["check-ignore", "--no-index", "-z", "--stdin"], {
    cwd: root,
    stdin: samples.join("\0") + "\0",
  });
  if (checked.code > 1) throw new Error(`git check-ignore failed: ${checked.stderr.trim()}`);
  const ignored = new Set(checked.stdout.split("\0"));
  return {
    tracked: tracked.slice(0, limit),
    trackedCount: tracked.length,
    unignored: samples.filter((s) => !ignored.has(s)),
  };
}

/** A gitignore pattern as a pathspec relative to the root. */
function pathspec(pattern: string): string {
  if (pattern.startsWith("!")) return `:(exclude)${pattern.slice(1)}`;
  return `:(glob)${pattern.endsWith("/") ? `${pattern}**` : pattern}`;
}

/** A path the pattern matches: `sessions/*\/heartbeat` → `sessions/x/heartbeat`. */
function sample(pattern: string): string {
  return pattern.replaceAll("**/", "").replaceAll("*", "x").replace(/\/$/, "/x");
}
