/**
 * Index entries as git keeps them, flags included: intent-to-add (`git add -N`), skip-worktree and
 * assume-unchanged are states a plain `git read-tree` or `update-index --index-info` loses, so a
 * restore that must give back `git status` exactly has to read and set them.
 *
 * @module
 */

import { joinPath } from "../core/path.ts";
import { git, GitError } from "../host/git.ts";

/** One entry of an index file. */
export interface IndexEntry {
  mode: string;
  oid: string;
  stage: number;
  path: string;
  intentToAdd: boolean;
  skipWorktree: boolean;
  assumeUnchanged: boolean;
}

// The in-memory flags `ls-files --debug` prints (git's cache.h).
const CE_VALID = 0x8000;
const CE_INTENT_TO_ADD = 1 << 29;
const CE_SKIP_WORKTREE = 1 << 30;

const RECORD = new RegExp(
  String.raw`(\d{6}) ([0-9a-f]+) (\d)\t([^\0]*)\0` +
    ["ctime", "mtime", "dev", "uid"].map((field) => String.raw` {2}${field}: [^\n]*\n`).join("") +
    String.raw` {2}size: \d+\tflags: ([0-9a-f]+)\n`,
  "y",
);

/** Parses `git ls-files --stage -z --debug`. */
export function parseIndexListing(text: string): IndexEntry[] {
  const entries: IndexEntry[] = [];
  RECORD.lastIndex = 0;
  while (RECORD.lastIndex < text.length) {
    const at = RECORD.lastIndex;
    const match = RECORD.exec(text);
    if (!match) throw new GitError(`cannot read git's index listing at byte ${at}`);
    const flags = parseInt(match[5]!, 16);
    entries.push({
      mode: match[1]!,
      oid: match[2]!,
      stage: Number(match[3]),
      path: match[4]!,
      intentToAdd: (flags & CE_INTENT_TO_ADD) !== 0,
      skipWorktree: (flags & CE_SKIP_WORKTREE) !== 0,
      assumeUnchanged: (flags & CE_VALID) !== 0,
    });
  }
  return entries;
}

/** The entries of the index file `indexFile` (all of them: callers pick their scope). */
export async function readIndexEntries(top: string, indexFile: string): Promise<IndexEntry[]> {
  const listing = await git(top, ["ls-files", "--stage", "-z", "--debug"], {
    env: { GIT_INDEX_FILE: indexFile },
  });
  return parseIndexListing(listing === "" ? "" : listing + "\n");
}

/**
 * Makes the entries at `replace` paths of the index file `indexFile` exactly `entries`: removes
 * what is there, adds the entries, then sets their flags. Intent-to-add entries can only be made
 * by `git add -N`, which needs a file at the path: it gets one in `scratch`, an empty directory
 * outside the work tree, so whatever the work tree holds there (a directory, a file where the
 * entry's directory would be) is neither in the way nor added instead.
 */
export async function replaceEntries(
  top: string,
  indexFile: string,
  { replace, entries, scratch }: { replace: string[]; entries: IndexEntry[]; scratch: string },
): Promise<void> {
  const env = { GIT_INDEX_FILE: indexFile };
  const zero = "0".repeat(entries[0]?.oid.length ?? 40);
  const lines = [
    ...replace.map((path) => `0 ${zero}\t${path}\0`),
    ...entries.filter((e) => !e.intentToAdd).map((e) =>
      `${e.mode} ${e.oid} ${e.stage}\t${e.path}\0`
    ),
  ];
  if (lines.length > 0) {
    await git(top, ["update-index", "-z", "--replace", "--index-info"], {
      env,
      stdin: lines.join(""),
    });
  }
  await addIntentToAdd(top, env, entries.filter((e) => e.intentToAdd), scratch);
  for (const [flag, pick] of FLAG_OPTIONS) {
    const paths = entries.filter(pick).map((e) => e.path);
    if (paths.length === 0) continue;
    await git(top, ["update-index", flag, "-z", "--stdin"], {
      env,
      stdin: paths.map((p) => p + "\0").join(""),
    });
  }
}

/** Intent-to-add entries, with their own modes, made by the only command that makes them. */
async function addIntentToAdd(
  top: string,
  env: Record<string, string>,
  intent: IndexEntry[],
  scratch: string,
): Promise<void> {
  if (intent.length === 0) return;
  for (const e of intent) {
    const file = joinPath(scratch, e.path);
    await Deno.mkdir(file.slice(0, file.lastIndexOf("/")), { recursive: true });
    await Deno.remove(file).catch(() => {}); // from a killed run's attempt
    if (e.mode === "120000") await Deno.symlink("intent-to-add", file);
    else await Deno.writeFile(file, new Uint8Array());
  }
  // `git add -N` takes the mode from the file; the entry's own mode is given back with --chmod.
  for (
    const [chmod, mode] of [["--chmod=-x", "100644"], ["--chmod=+x", "100755"], [null, "120000"]]
  ) {
    const paths = intent.filter((e) => e.mode === mode).map((e) => `:(top,literal)${e.path}\0`);
    if (paths.length === 0) continue;
    await git(top, [
      `--work-tree=${scratch}`,
      "add",
      "--intent-to-add",
      "--force",
      "--sparse",
      ...(chmod ? [chmod] : []),
      "--pathspec-from-file=-",
      "--pathspec-file-nul",
    ], { env, stdin: paths.join("") });
  }
}

const FLAG_OPTIONS: [string, (e: IndexEntry) => boolean][] = [
  ["--skip-worktree", (e) => e.skipWorktree],
  ["--assume-unchanged", (e) => e.assumeUnchanged],
];
