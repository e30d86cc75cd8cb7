/**
 * Backups of what a rollback (or a forced restore) overwrites or deletes, as git commits under
 * `refs/lifeline/backups/`, which `git gc` keeps:
 *
 * - the commit's tree holds the saved files, byte for byte (hashed with `--no-filters`), so
 *   `git show <ref>:<path>` shows them;
 * - its first parent is HEAD before; its second the index before, as a tree (which also keeps
 *   the staged objects alive); its third holds `index`, the index file itself (intent-to-add,
 *   skip-worktree and assume-unchanged included), and `manifest.json`: every path the operation
 *   may change, with its exact state before (file and mode, link, directory, or absent).
 *
 * @module
 */

import * as z from "zod";
import { lazy } from "../core/lazy.ts";
import { joinPath } from "../core/path.ts";
import { git, GitError, resolveCommit } from "../host/git.ts";
import { CliError } from "../core/cli.ts";
import { ancestors, namesGitDir, readBlobs } from "./worktree.ts";
import { OWN_STATE_DIRS, type Repo } from "./repo.ts";

/** A path's state before, as the manifest records it (files and links always hashed). */
export type SavedState =
  | { kind: "absent" }
  | { kind: "file"; mode: number; size: number; oid: string }
  | { kind: "symlink"; target: string; oid: string }
  | { kind: "dir"; mode: number };

/** What the work tree is expected to be after the operation, so a restore can tell later work. */
export type AfterState =
  | { kind: "stable"; commit: string; name: string }
  | { kind: "restore"; backup: string };

/** `manifest.json` of a backup. */
export interface Manifest {
  version: 2;
  task: string;
  /** Epoch ms. */
  created: number;
  /** The project root relative to the top ("" for the whole repository). */
  scope: string;
  pre_head: string;
  /** The branch HEAD pointed to, or null when detached. */
  head_ref: string | null;
  /** The work tree it was made in (`Repo.worktree`); absent in older backups. */
  worktree?: string | undefined;
  /** Whether the operation moved HEAD (only when the root is the repository's top). */
  move_head: boolean;
  after: AfterState;
  paths: Record<string, SavedState>;
  files: number;
  bytes: number;
  /** Bytes of saved content that was neither staged nor committed: what the backup adds. */
  new_bytes: number;
}

const manifestSchema = lazy(() => {
  const state = z.union([
    z.object({ kind: z.literal("absent") }),
    z.object({ kind: z.literal("file"), mode: z.number(), size: z.number(), oid: z.string() }),
    z.object({ kind: z.literal("symlink"), target: z.string(), oid: z.string() }),
    z.object({ kind: z.literal("dir"), mode: z.number() }),
  ]);
  return z.object({
    version: z.literal(2),
    task: z.string(),
    created: z.number(),
    scope: z.string(),
    pre_head: z.string(),
    head_ref: z.nullable(z.string()),
    worktree: z.optional(z.string()),
    move_head: z.boolean(),
    after: z.union([
      z.object({ kind: z.literal("stable"), commit: z.string(), name: z.string() }),
      z.object({ kind: z.literal("restore"), backup: z.string() }),
    ]),
    paths: z.record(z.string(), state),
    files: z.number(),
    bytes: z.number(),
    new_bytes: z.number(),
  });
});

/** A backup read back. */
export interface Backup {
  ref: string;
  commit: string;
  manifest: Manifest;
  /** The object holding the index file before (null when there was none). */
  indexBlob: string | null;
}

const PREFIX = "refs/lifeline/backups/";

/** The full ref for a name or ref given on the command line. Throws when it is no backup's. */
export function backupRef(name: string): string {
  const ref = name.startsWith("refs/") ? name : PREFIX + name;
  const rest = ref.slice(PREFIX.length);
  if (!ref.startsWith(PREFIX) || !/^[\w.-]+(\/[\w.-]+)*$/.test(rest) || /(^|\/)\./.test(rest)) {
    throw new CliError(
      `${name} is not a backup: lifeline restores only refs under ${PREFIX} that it names`,
      "list the backups with: lifeline fail list",
    );
  }
  return ref;
}

const OID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/** Why `path` is not a path a restore within `scope` may write, or null when it is one. */
function unsafePath(path: string, scope: string): string | null {
  const parts = path.split("/");
  if (path.startsWith("/")) return "absolute";
  if (parts.some((p) => p === "" || p === "." || p === ".." || p.includes("\0"))) {
    return "not a plain relative path";
  }
  if (namesGitDir(path)) return "inside a .git directory";
  if (scope && !path.startsWith(scope + "/")) return `outside the scope ${scope}/`;
  const first = parts[scope ? scope.split("/").length : 0]!;
  if ((OWN_STATE_DIRS as readonly string[]).includes(first)) return "lifeline's own state";
  return null;
}

/**
 * Refuses a manifest a restore could be led astray by (a corrupted one, or a ref fetched from
 * somewhere else): every path relative and inside the scope, never in `.git` or lifeline's own
 * state, every directory above a saved entry a saved directory (so nothing is written through a
 * link the restore itself makes), object ids that are object ids.
 */
function checkManifest(ref: string, m: Manifest): void {
  const refuse = (what: string, why: string) => {
    throw new CliError(
      `${ref} is not a backup lifeline can restore: ${what} (${why})`,
      // Never "delete it": a backup made by an older version may hold the only copy of work.
      `its files stay in the commit: \`git show ${ref}:<path>\` prints one, and ` +
        `\`git show ${ref}^3:manifest.json\` lists every saved path with its object`,
    );
  };
  if (m.scope && unsafePath(m.scope, "")) refuse(`its scope ${m.scope}`, unsafePath(m.scope, "")!);
  for (const commit of [m.pre_head, ...(m.after.kind === "stable" ? [m.after.commit] : [])]) {
    if (!OID.test(commit)) refuse(`it names the commit ${commit}`, "not an object id");
  }
  if (m.head_ref !== null && !/^refs\/heads\/./.test(m.head_ref)) {
    refuse(`it names the branch ${m.head_ref}`, "not a branch");
  }
  const depth = m.scope ? m.scope.split("/").length : 0;
  for (const [path, state] of Object.entries(m.paths)) {
    const why = unsafePath(path, m.scope);
    if (why) refuse(`it names the path ${path}`, why);
    if ("oid" in state && !OID.test(state.oid)) {
      refuse(`${path} has ${state.oid}`, "not an object id");
    }
    if (
      "mode" in state && !(Number.isInteger(state.mode) && state.mode >= 0 && state.mode <= 0o7777)
    ) {
      refuse(`${path} has the mode ${state.mode}`, "not a file mode");
    }
    if (state.kind === "absent") continue;
    for (const dir of ancestors(path).slice(depth)) {
      if (m.paths[dir]?.kind !== "dir") {
        refuse(`it names the path ${path}`, `${dir} is no saved directory`);
      }
    }
  }
}

/**
 * Who the backup commits are by. They are lifeline's snapshots, not the user's commits, and a
 * repository without a configured identity (a container, a CI machine) must still be backed up.
 */
function identity(now: number): Record<string, string> {
  const date = `@${Math.floor(now / 1000)} +0000`;
  return {
    GIT_AUTHOR_NAME: "lifeline",
    GIT_AUTHOR_EMAIL: "lifeline@localhost",
    GIT_COMMITTER_NAME: "lifeline",
    GIT_COMMITTER_EMAIL: "lifeline@localhost",
    GIT_AUTHOR_DATE: date,
    GIT_COMMITTER_DATE: date,
  };
}

/** The tree of the saved files, built in a temporary index (the real one is not touched). */
async function filesTree(repo: Repo, manifest: Manifest, tmp: string): Promise<string> {
  const lines: string[] = [];
  for (const [path, s] of Object.entries(manifest.paths)) {
    if (s.kind === "file") {
      lines.push(`${s.mode & 0o111 ? "100755" : "100644"} ${s.oid}\t${path}\0`);
    }
    if (s.kind === "symlink") lines.push(`120000 ${s.oid}\t${path}\0`);
  }
  const env = { GIT_INDEX_FILE: joinPath(tmp, "files.index") };
  await Deno.remove(env.GIT_INDEX_FILE).catch(() => {}); // from an earlier version of the backup
  if (lines.length > 0) {
    await git(repo.top, ["update-index", "-z", "--index-info"], { env, stdin: lines.join("") });
  }
  return await git(repo.top, ["write-tree"], { env });
}

/**
 * Makes an index file hold all its entries itself. A split index (core.splitIndex) only points at
 * `.git/sharedindex.<id>`, which git deletes two weeks after the last index that used it: a backup
 * of a split index would stop being restorable.
 */
async function wholeIndex(repo: Repo, file: string): Promise<void> {
  // "link" is the signature of the extension that names the shared index (one byte, one char).
  if (!new TextDecoder("latin1").decode(await Deno.readFile(file)).includes("link")) return;
  await git(repo.top, ["update-index", "--no-split-index"], { env: { GIT_INDEX_FILE: file } });
}

/** The index file before, as a blob and as a tree (`null` blob when there was none). */
async function indexObjects(repo: Repo, indexCopy: string, tmp: string) {
  let blob: string | null = null;
  const treeIndex = joinPath(tmp, "tree.index");
  try {
    await Deno.copyFile(indexCopy, treeIndex);
    await wholeIndex(repo, indexCopy);
    blob = await git(repo.top, ["hash-object", "-w", "--no-filters", "--", indexCopy]);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const tree = await git(repo.top, ["write-tree"], { env: { GIT_INDEX_FILE: treeIndex } });
  return { blob, tree };
}

/**
 * A task id as the start of a backup's name. Task ids may hold dots where git refuses them in a
 * ref (`a..b`, `.hidden`); those become `_` (the manifest keeps the task id as given).
 */
export function backupNameOf(task: string): string {
  return task.replace(/\.(?=\.)/g, "_").replace(/^\./, "_");
}

/** Saves a backup: objects first, then the ref, which git creates atomically. Returns the ref. */
export async function writeBackup(
  repo: Repo,
  manifest: Manifest,
  { name, indexCopy, tmp }: { name: string; indexCopy: string; tmp: string },
): Promise<string> {
  return await createRef(
    repo,
    PREFIX + name,
    await backupCommit(repo, manifest, { indexCopy, tmp }),
  );
}

/**
 * Points the backup `ref` at a new commit for `manifest` (what a path held changed while it was
 * being replaced); compare-and-swap from the commit it is at.
 */
export async function updateBackup(
  repo: Repo,
  ref: string,
  manifest: Manifest,
  { indexCopy, tmp }: { indexCopy: string; tmp: string },
): Promise<void> {
  const old = await resolveCommit(repo.top, ref);
  const commit = await backupCommit(repo, manifest, { indexCopy, tmp });
  await git(repo.top, ["update-ref", ref, commit, ...(old ? [old] : [])]);
}

/** The backup commit of `manifest` (see the module's description). */
async function backupCommit(
  repo: Repo,
  manifest: Manifest,
  { indexCopy, tmp }: { indexCopy: string; tmp: string },
): Promise<string> {
  const env = identity(manifest.created);
  const files = await filesTree(repo, manifest, tmp);
  const index = await indexObjects(repo, indexCopy, tmp);
  const manifestBlob = await git(repo.top, ["hash-object", "-w", "--stdin"], {
    stdin: JSON.stringify(manifest, null, 1) + "\n",
  });
  const meta = await git(repo.top, ["mktree", "-z"], {
    stdin: `100644 blob ${manifestBlob}\tmanifest.json\0` +
      (index.blob ? `100644 blob ${index.blob}\tindex\0` : ""),
  });
  const commitTree = (tree: string, parents: string[], message: string) =>
    git(repo.top, ["commit-tree", tree, ...parents.flatMap((p) => ["-p", p]), "-m", message], {
      env,
    });
  const indexCommit = await commitTree(index.tree, [manifest.pre_head], `lifeline: index`);
  const metaCommit = await commitTree(meta, [], `lifeline: manifest and index file`);
  return await commitTree(
    files,
    [manifest.pre_head, indexCommit, metaCommit],
    [
      `lifeline backup before ${manifest.after.kind === "stable" ? "a rollback" : "a restore"}` +
      ` (${manifest.task})`,
      "",
      `Scope: ${manifest.scope || "(the whole repository)"}`,
      `Holds ${manifest.files} files, ${manifest.bytes} bytes.`,
      `Restore with: lifeline fail restore <this ref>`,
    ].join("\n"),
  );
}

async function createRef(repo: Repo, ref: string, commit: string): Promise<string> {
  const zero = "0".repeat(commit.length);
  for (let n = 1;; n++) {
    const candidate = n === 1 ? ref : `${ref}-${n}`;
    if (await resolveCommit(repo.top, candidate)) continue;
    try {
      await git(repo.top, ["update-ref", candidate, commit, zero]);
      return candidate;
    } catch (error) {
      // Another work tree of this repository took the name between the check and the update;
      // any other failure (a name git refuses) would fail again under the next name.
      const taken = error instanceof GitError && await resolveCommit(repo.top, candidate);
      if (!taken || n > 20) throw error;
    }
  }
}

/** Reads a backup. Throws a {@linkcode CliError} naming the ref when it is not one. */
export async function readBackup(repo: Repo, name: string): Promise<Backup> {
  const ref = backupRef(name);
  const commit = await resolveCommit(repo.top, ref);
  if (!commit) {
    throw new CliError(`there is no backup ${ref}`, "list the backups with: lifeline fail list");
  }
  const meta = await git(repo.top, ["rev-parse", `${commit}^3`]).catch(() => null);
  if (!meta) {
    throw new CliError(
      `${ref} was made by an older lifeline, which cannot restore it exactly`,
      `its files are in the commit: git restore --source=${ref} --worktree -- <paths>`,
    );
  }
  const [manifestOid, indexBlob] = await Promise.all(
    ["manifest.json", "index"].map((file) =>
      git(repo.top, ["rev-parse", "--verify", "--quiet", `${meta}:${file}`]).catch(() => null)
    ),
  );
  if (!manifestOid) throw new CliError(`${ref} is not a lifeline backup (no manifest)`);
  const text = new TextDecoder().decode(
    (await readBlobs(repo.top, [manifestOid])).get(manifestOid),
  );
  const manifest = manifestSchema().parse(JSON.parse(text));
  checkManifest(ref, manifest);
  return { ref, commit, manifest, indexBlob: indexBlob ?? null };
}

/** One backup, as `fail list` shows it. Older backups have no manifest: their sizes are null. */
export interface BackupSummary {
  ref: string;
  commit: string;
  created: number;
  task: string;
  scope: string | null;
  files: number | null;
  bytes: number | null;
  new_bytes: number | null;
}

/** Every backup of the repository, newest first. */
export async function listBackups(repo: Repo): Promise<BackupSummary[]> {
  const listing = await git(repo.top, [
    "for-each-ref",
    "--format=%(refname)%00%(objectname)%00%(creatordate:unix)%00%(parent)",
    PREFIX,
  ]);
  const rows = listing.split("\n").filter(Boolean).map((line) => {
    const [ref, commit, date, parents] = line.split("\0") as [string, string, string, string];
    return { ref, commit, created: Number(date) * 1000, meta: parents.split(" ")[2] ?? null };
  });
  const metas = rows.filter((r) => r.meta);
  const oids = metas.length === 0 ? [] : (await git(repo.top, [
    "rev-parse",
    ...metas.map((r) => `${r.meta}:manifest.json`),
  ]).catch(() => "")).split("\n");
  const blobs = await readBlobs(repo.top, oids.filter(Boolean)).catch(() => new Map());
  const decoder = new TextDecoder();
  return rows.map((row) => {
    const oid = row.meta ? oids[metas.indexOf(row)] : undefined;
    const bytes = oid ? blobs.get(oid) : undefined;
    const m = bytes ? z.safeParse(manifestSchema(), JSON.parse(decoder.decode(bytes))) : null;
    const manifest = m?.success ? m.data : null;
    return {
      ref: row.ref,
      commit: row.commit,
      created: manifest?.created ?? row.created,
      task: manifest?.task ?? row.ref.slice(PREFIX.length),
      scope: manifest?.scope ?? null,
      files: manifest?.files ?? null,
      bytes: manifest?.bytes ?? null,
      new_bytes: manifest?.new_bytes ?? null,
    };
  }).sort((a, b) => b.created - a.created);
}

/** Deletes backup refs in one transaction (the objects go at git's next gc). */
export async function deleteBackups(repo: Repo, refs: string[]): Promise<void> {
  if (refs.length === 0) return;
  await git(repo.top, ["update-ref", "--stdin"], {
    stdin: refs.map((ref) => `delete ${ref}\n`).join(""),
  });
}
