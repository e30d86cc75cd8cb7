/**
 * Backup refs shaped like lifeline's, made by hand, as a corrupted manifest or a ref fetched from a
 * hostile remote would be.
 *
 * @module
 */

import { git } from "./git_repo.ts";

/** Runs git with `stdin`; returns its output. */
export async function gitStdin(repo: string, args: string[], stdin: string): Promise<string> {
  const child = new Deno.Command("git", { args, cwd: repo, stdin: "piped", stdout: "piped" })
    .spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  return new TextDecoder().decode((await child.output()).stdout).trim();
}

/**
 * A backup ref shaped like lifeline's (files, index and manifest commits) whose manifest names
 * `paths`, as a corrupted manifest or a ref fetched from a hostile remote would.
 */
export async function craftBackup(
  repo: string,
  name: string,
  paths: Record<string, unknown>,
  scope = "",
) {
  const head = await git(repo, "rev-parse", "HEAD");
  const manifest = {
    version: 2,
    task: "x",
    created: Date.now(),
    scope,
    pre_head: head,
    head_ref: "refs/heads/main",
    move_head: false,
    after: { kind: "stable", commit: head, name: "stable-1" },
    paths,
    files: 1,
    bytes: 1,
    new_bytes: 0,
  };
  const meta = await gitStdin(repo, ["hash-object", "-w", "--stdin"], JSON.stringify(manifest));
  const metaTree = await gitStdin(repo, ["mktree"], `100644 blob ${meta}\tmanifest.json\n`);
  const tree = await git(repo, "write-tree");
  const metaCommit = await git(repo, "commit-tree", metaTree, "-m", "meta");
  const indexCommit = await git(repo, "commit-tree", tree, "-p", head, "-m", "index");
  const commit = await git(
    repo,
    ...["commit-tree", tree, "-p", head, "-p", indexCommit, "-p", metaCommit, "-m", "backup"],
  );
  await git(repo, "update-ref", `refs/lifeline/backups/${name}`, commit);
}
