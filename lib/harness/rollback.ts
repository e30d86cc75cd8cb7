/**
 * Rolling a project back to its stable commit without losing work (DESIGN §6, spec/handle-failure.md
 * Step 6), and putting the work back.
 *
 * The scope is the project root minus lifeline's own state (`repo.ts`). When the root is the
 * repository's top, a rollback is the specification's `git reset --hard <stable>` within that
 * scope: the branch moves. When the root is below the top, only the root's subtree is restored
 * from the stable commit, and HEAD does not move. Before anything changes, everything the
 * rollback may overwrite or delete is saved under `refs/lifeline/backups/` (`backup.ts`); what
 * cannot be saved is refused first (`plan.ts`). A run killed at any point is finished by the
 * next one (`journal.ts`). `git clean` is never run.
 *
 * @module
 */

import { git, headBranch, repoTop, resolveCommit } from "../host/git.ts";
import { joinPath } from "../core/path.ts";
import { compactStamp } from "../core/text.ts";
import { applyRestore, applyRollback, copyIndex, stageRollback } from "./apply.ts";
import {
  type Backup,
  backupNameOf,
  listBackups,
  type Manifest,
  readBackup,
  updateBackup,
  writeBackup,
} from "./backup.ts";
import type { Resave } from "./swap.ts";
import {
  type Journal,
  journalPending,
  readJournal,
  removeStaleLocks,
  withRepoLock,
} from "./journal.ts";
import { legacySetAsidePending, recoverLegacySetAside } from "./legacy_set_aside.ts";
import {
  OperationFailedError,
  type RunInfo,
  runJournaled,
  saved,
  savedIndexFile,
  startApplying,
  toManifest,
  totalNewBytes,
  totals,
} from "./operation.ts";
import { listed } from "./plan.ts";
import { openRepo, RefusedError, type Repo } from "./repo.ts";
import { asSaved, changedSinceRollback, saveBeforeRestore } from "./restore_check.ts";
import {
  checkTarget,
  planFor,
  refuseOperations,
  type RollbackPlan,
  type RollbackTarget,
  STABLE_REF,
  type StableCommit,
} from "./rollback_plan.ts";
import { hashStates, TreeReader } from "./worktree.ts";
import { bytesText, firstLine } from "./wording.ts";

/** The settings a rollback reads from `config.breaker`. */
export interface RollbackSettings {
  tagPattern: string;
  maxFileBytes: number;
  maxTotalBytes: number;
}

/** What a run found and finished of earlier runs. */
export interface Recovered {
  /** An operation that a run which died left half-done, now finished. */
  finished: {
    op: "rollback" | "restore";
    /** The dead run's pid, and the step it was in. */
    pid: number;
    step: string;
    /** The backup describing the operation, and the one saving the state found. */
    backup: string | null;
    savedFirst: string | null;
  } | null;
  /** Lock files the dead run left, removed. */
  locks: string[];
  /** Files of lifeline's own state that an older version set aside, put back. */
  legacyRestored: string[];
}

/** Marks HEAD as this work tree's stable commit (`STABLE_REF`), or does nothing outside git. */
export async function markStable(root: string): Promise<string | null> {
  const top = await repoTop(root);
  if (!top) return null;
  const head = await resolveCommit(top, "HEAD");
  if (!head) return null;
  await git(top, ["update-ref", STABLE_REF, head]);
  return head;
}

/** What `fail handle --dry-run` shows: the plan, from the real index, changing nothing. */
export async function planRollback(
  root: string,
  settings: RollbackSettings,
): Promise<RollbackPlan> {
  const repo = await openRepo(root);
  const target = await checkTarget(repo, settings.tagPattern);
  return await planFor(repo, target, {
    indexFile: repo.index,
    maxFileBytes: settings.maxFileBytes,
  });
}

/** What a rollback did. */
export interface RollbackDone {
  backup: string;
  manifest: Manifest;
  stable: StableCommit;
  /** The scope rolled back ("" for the whole repository), and whether HEAD moved. */
  scope: string;
  headMoved: boolean;
  recovered: Recovered | null;
}

/** Saves, then rolls back. Throws {@linkcode RefusedError} or {@linkcode OperationFailedError}. */
export async function rollBack(
  root: string,
  { task, run, settings }: { task: string; run: RunInfo; settings: RollbackSettings },
): Promise<RollbackDone> {
  const repo = await openRepo(root);
  return await withRepoLock(repo, async () => {
    const recovered = await finishInterrupted(repo, run);
    const target = await checkTarget(repo, settings.tagPattern);
    const { ref, manifest } = await runJournaled(repo, { op: "rollback", run, backup: null }, (
      journal,
      tmp,
    ) =>
      saveAndRollBack(repo, { target, task, run, tmp, settings }, async (saved) => {
        // Made before the run is decided: a failure here (a full disk, a failing filter) changed
        // nothing, and leaves nothing for a later run to finish.
        const staged = await stageRollback(repo, { ...saved, tmp }).catch((error) => {
          throw new OperationFailedError(
            `the stable files could not be made: ${
              firstLine(error instanceof Error ? error.message : String(error))
            }`,
            saved.ref,
            true,
          );
        });
        await startApplying(repo, journal, saved.ref);
        await applyOrUndo(
          saved.ref,
          () => applyRollback(repo, journal, { ...saved, tmp, staged }),
          () =>
            applyRestore(repo, journal, {
              manifest: saved.manifest,
              savedIndex: saved.indexCopy,
              headFrom: [target.stable.commit],
              tmp,
            }),
        );
      }));
    return {
      backup: ref,
      manifest,
      stable: target.stable,
      scope: repo.prefix,
      headMoved: manifest.move_head,
      recovered,
    };
  });
}

/** A rollback's backup, saved, and what its git steps need. */
interface Saved {
  ref: string;
  manifest: Manifest;
  /** The index before (the backup holds it; an undo puts it back). */
  indexCopy: string;
  plan: RollbackPlan;
  /** Saves into the backup what an agent wrote to a path since it was saved. */
  resave: Resave;
}

/** Plans, refuses what it must, saves the backup, then hands over to `apply`. */
async function saveAndRollBack(
  repo: Repo,
  { target, task, run, tmp, settings }: {
    target: RollbackTarget;
    task: string;
    run: RunInfo;
    tmp: string;
    settings: Pick<RollbackSettings, "maxFileBytes" | "maxTotalBytes">;
  },
  apply: (saved: Saved) => Promise<void>,
): Promise<{ ref: string; manifest: Manifest }> {
  const held = totalNewBytes(await listBackups(repo));
  refuseOverBudget(held, settings.maxTotalBytes); // before hashing writes any object
  const indexCopy = joinPath(tmp, "before.index");
  await copyIndex(repo, indexCopy);
  const plan = await planFor(repo, target, {
    indexFile: indexCopy,
    maxFileBytes: settings.maxFileBytes,
  });
  await hashStates(repo.top, plan.states, { write: true, tmp: joinPath(tmp, "links") });
  const manifest = toManifest(plan.states, plan.known, {
    task,
    created: run.now,
    scope: repo.prefix,
    pre_head: target.head,
    head_ref: await headBranch(repo.top),
    worktree: repo.worktree,
    move_head: plan.moveHead,
    after: { kind: "stable", commit: target.stable.commit, name: target.stable.name },
  });
  refuseOverBudget(held + manifest.new_bytes, settings.maxTotalBytes);
  const ref = await writeBackup(repo, manifest, {
    name: `${backupNameOf(task)}-${compactStamp(run.now)}`,
    indexCopy,
    tmp,
  });
  const resave: Resave = async (found, fileOf) => {
    await hashStates(repo.top, found, { write: true, tmp: joinPath(tmp, "links"), fileOf });
    for (const [path, state] of found) {
      const s = saved(path, state);
      if (s) manifest.paths[path] = s;
    }
    Object.assign(manifest, totals(manifest.paths, plan.known));
    await updateBackup(repo, ref, manifest, { indexCopy, tmp });
  };
  await apply({ ref, manifest, indexCopy, plan, resave });
  return { ref, manifest };
}

function refuseOverBudget(bytes: number, maxBytes: number): void {
  if (bytes <= maxBytes) return;
  throw new RefusedError(
    `backups would hold ${bytesText(bytes)}, over breaker.maxBackupsMB (${bytesText(maxBytes)})`,
    "remove old ones with `lifeline fail prune --keep 5` (see `lifeline fail list`)",
  );
}

/** Runs the git steps; when they fail, puts the backup back so nothing is left half-done. */
async function applyOrUndo(
  ref: string,
  apply: () => Promise<void>,
  undo: () => Promise<void>,
): Promise<void> {
  try {
    await apply();
  } catch (error) {
    const reason = firstLine(error instanceof Error ? error.message : String(error));
    try {
      await undo();
    } catch (undoError) {
      const why = firstLine(undoError instanceof Error ? undoError.message : String(undoError));
      throw new OperationFailedError(
        `${reason}; putting the backup back failed too: ${why}`,
        ref,
        false,
      );
    }
    throw new OperationFailedError(reason, ref, true);
  }
}

/** What a restore did. */
export interface RestoreDone {
  backup: Backup;
  /** The state found, saved first (with --force, or when finishing an interrupted run). */
  savedFirst: string | null;
  headMoved: boolean;
  recovered: Recovered | null;
  /** The project was as the backup holds it already (its rollback changed nothing, or it was restored). */
  alreadyAsSaved?: boolean;
}

/**
 * Puts a backup back. Refuses when anything it would overwrite changed since the rollback,
 * unless `force`, which saves the current state as a new backup first.
 */
export async function restoreBackup(
  root: string,
  name: string,
  { force, run }: { force: boolean; run: RunInfo },
): Promise<RestoreDone> {
  const found = await openRepo(root);
  return await withRepoLock(found, async () => {
    const recovered = await finishInterrupted(found, run);
    const backup = await readBackup(found, name);
    const finished = recovered?.finished;
    if (finished?.op === "restore" && finished.backup === backup.ref) {
      // A killed restore of this very backup, now finished: it is restored, nothing else to do.
      return {
        backup,
        savedFirst: finished.savedFirst,
        headMoved: backup.manifest.move_head,
        recovered,
      };
    }
    const repo = { ...found, prefix: backup.manifest.scope };
    await refuseOtherCheckout(repo, backup);
    await refuseLinkedScope(repo);
    await refuseOperations(repo);
    const savedFirst = await runJournaled(repo, { op: "restore", run, backup: null }, async (
      journal,
      tmp,
    ) => {
      const savedIndex = await savedIndexFile(repo, backup, tmp);
      // A run killed (or failed) before it changed anything left a backup of the project as it
      // still is: restoring it has nothing to do, and nothing to refuse.
      if (await asSaved(repo, backup, { savedIndex, tmp })) return "as saved" as const;
      const changes = await changedSinceRollback(repo, backup, tmp);
      if (changes.length > 0 && !force) {
        throw new RefusedError(
          `what changed since the rollback would be overwritten: ${listed(changes)}`,
          "add --force to save the current state as a new backup first, then restore",
        );
      }
      const saved = changes.length > 0 ? await saveBeforeRestore(repo, backup, { run, tmp }) : null;
      await startApplying(repo, journal, backup.ref);
      await restoreSteps(repo, journal, { backup, savedIndex, tmp });
      return saved;
    });
    if (savedFirst === "as saved") {
      return { backup, savedFirst: null, headMoved: false, recovered, alreadyAsSaved: true };
    }
    return { backup, savedFirst, headMoved: backup.manifest.move_head, recovered };
  });
}

/**
 * Refuses a backup made in another work tree of the repository, or on another branch: its files
 * and index are that checkout's, and its HEAD that branch's, so they would land on this one.
 */
async function refuseOtherCheckout(repo: Repo, { ref, manifest: m }: Backup): Promise<void> {
  if (m.worktree !== undefined && m.worktree !== repo.worktree) {
    throw new RefusedError(
      `${ref} was made in another work tree of this repository (${
        m.worktree ? `git dir ${m.worktree}` : "the main one"
      })`,
      "restore it there: `git worktree list` shows where that is",
    );
  }
  const branch = await headBranch(repo.top);
  if (branch === m.head_ref) return;
  const name = (ref: string | null) => ref ? ref.replace(/^refs\/heads\//, "") : "a detached HEAD";
  throw new RefusedError(
    `${ref} was made on ${name(m.head_ref)}, and ${name(branch)} is checked out now`,
    m.head_ref
      ? `switch back first: git switch ${name(m.head_ref)}`
      : `detach HEAD first: git switch --detach ${
        m.after.kind === "stable" ? m.after.commit.slice(0, 12) : "<commit>"
      }`,
  );
}

/** Refuses a backup's scope that is not a directory of the work tree (a link to elsewhere). */
async function refuseLinkedScope(repo: Repo): Promise<void> {
  if (!repo.prefix || (await new TreeReader(repo.top).state(repo.prefix)).kind === "dir") return;
  throw new RefusedError(
    `${repo.prefix}/ is not a directory of the work tree (a link, a file, or missing)`,
    "put the project's directory back where the backup was made first",
  );
}

async function restoreSteps(
  repo: Repo,
  journal: Journal,
  { backup, savedIndex, tmp }: { backup: Backup; savedIndex: string; tmp: string },
) {
  const head = await resolveCommit(repo.top, "HEAD");
  await applyRestore(repo, journal, {
    manifest: backup.manifest,
    savedIndex,
    headFrom: head ? [head] : [],
    tmp,
  });
}

/**
 * Finishes what a run that died left (its journal), saving the state found first, and puts back
 * lifeline's state that an older version set aside. Call with the repository lock held.
 */
async function finishInterrupted(repo: Repo, run: RunInfo): Promise<Recovered | null> {
  const legacyRestored = await recoverLegacySetAside(repo);
  const journal = await readJournal(repo);
  if (!journal) {
    return legacyRestored.length === 0 ? null : { finished: null, locks: [], legacyRestored };
  }
  const locks = await removeStaleLocks(repo, journal);
  let savedFirst: string | null = null;
  if (journal.backup) {
    const backup = await readBackup(repo, journal.backup);
    const scoped = { ...repo, prefix: backup.manifest.scope };
    savedFirst = await runJournaled(
      scoped,
      { op: journal.op, run, backup: backup.ref },
      (j, tmp) =>
        journal.op === "restore"
          ? finishRestore(scoped, j, backup, { run, tmp })
          : finishRollback(scoped, j, backup.manifest, { run, tmp }),
    );
  } else {
    await runJournaled(repo, { op: journal.op, run, backup: null }, () => Promise.resolve());
  }
  const { op, pid, step, backup } = journal;
  return { finished: { op, pid, step, backup, savedFirst }, locks, legacyRestored };
}

async function finishRestore(
  repo: Repo,
  journal: Journal,
  backup: Backup,
  { run, tmp }: { run: RunInfo; tmp: string },
): Promise<string> {
  const savedIndex = await savedIndexFile(repo, backup, tmp);
  const saved = await saveBeforeRestore(repo, backup, { run, tmp });
  await restoreSteps(repo, journal, { backup, savedIndex, tmp });
  return saved;
}

/** Rolls back again to the same commit, from whatever state the dead run left, saving it first. */
async function finishRollback(
  repo: Repo,
  journal: Journal,
  manifest: Manifest,
  { run, tmp }: { run: RunInfo; tmp: string },
): Promise<string> {
  if (manifest.after.kind !== "stable") throw new Error("not a rollback's backup");
  const head = await resolveCommit(repo.top, "HEAD");
  const stable = { commit: manifest.after.commit, name: manifest.after.name };
  const { ref } = await saveAndRollBack(repo, {
    target: { head: head ?? manifest.pre_head, stable },
    task: manifest.task,
    run,
    tmp,
    settings: { maxFileBytes: Infinity, maxTotalBytes: Infinity },
  }, async (saved) => {
    await startApplying(repo, journal, saved.ref);
    await applyRollback(repo, journal, { ...saved, tmp });
  });
  return ref;
}

/**
 * Finishes an interrupted rollback or restore, if one is pending, for commands that are about to
 * read the project (`fail handle`, `fail init`). Returns what it did, or null.
 */
export async function recoverRepo(root: string, run: RunInfo): Promise<Recovered | null> {
  if (!(await repoTop(root))) return null;
  const repo = await openRepo(root);
  // Most runs find nothing to do: they look without taking the lock (or creating anything).
  if (!(await journalPending(repo)) && !(await legacySetAsidePending(repo))) return null;
  return await withRepoLock(repo, () => finishInterrupted(repo, run));
}
