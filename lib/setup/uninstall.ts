/**
 * `lifeline uninstall`, apart from the services: taking lifeline's hooks out of every settings
 * file that has them, and listing, with the command that removes each, the state lifeline leaves
 * behind (it deletes none of it: a session's handoff or a rollback's backup may be all that is
 * left of someone's work).
 *
 * @module
 */

import { baseName, dirName, joinPath, relativeTo } from "../core/path.ts";
import { shellWord } from "../core/text.ts";
import { commandHooks, lifelineHookOf, removeHooks, settingsPath } from "../claude/settings.ts";
import { git, repoTop } from "../host/git.ts";
import { onPath } from "../host/self.ts";
import { killSwitchPath, projectPaths, stateDir, userConfigPath } from "../state/layout.ts";
import { describeError, listNames, pathExists } from "../state/store.ts";
import { excludeTarget } from "./git_exclude.ts";
import { openSettings, writeSettings } from "./settings_file.ts";

/** What became of one settings file. */
export type SettingsRemoval =
  | { path: string; removed: string[]; backup: string | null }
  | { path: string; error: string };

/** The settings files Claude Code reads for these roots (user, then each root's project, local). */
export function settingsFiles(env: Readonly<Record<string, string>>, roots: readonly string[]) {
  const paths = [settingsPath("user", env, roots[0] ?? "/")];
  for (const root of roots) {
    paths.push(settingsPath("project", env, root), settingsPath("local", env, root));
  }
  return [...new Set(paths)];
}

/** Takes lifeline's hooks out of each file that has them; a file that cannot be read is named. */
export async function removeFromSettings(
  paths: readonly string[],
  { now }: { now: number },
): Promise<SettingsRemoval[]> {
  const results: SettingsRemoval[] = [];
  for (const path of paths) {
    try {
      const file = await openSettings(path, { merge: false });
      const hasOurs = commandHooks(file.value).some((h) => lifelineHookOf(h.command) !== null);
      if (file.text === null || !hasOurs) continue;
      const { settings, removed } = removeHooks(file.value);
      results.push({ path, removed, backup: await writeSettings(file, settings, { now }) });
    } catch (error) {
      results.push({ path, error: describeError(error) });
    }
  }
  return results;
}

/** Something lifeline leaves: what it is, where, and the command that removes it. */
export interface Leftover {
  what: string;
  paths: string[];
  command: string;
}

async function existing(paths: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const path of paths) if (await pathExists(path)) found.push(path);
  return found;
}

/** lifeline's refs: backups and the older shared stable mark; this work tree's stable mark. */
const LIFELINE_REFS = ["refs/lifeline/", "refs/worktree/lifeline/"];

/** What lifeline left under one project root, and in its repository. */
async function projectLeftovers(root: string): Promise<Leftover[]> {
  const p = projectPaths(root);
  const left: Leftover[] = [];
  const files = await existing([p.sessions, p.recoveryLog, p.lifeline, p.harness, p.trace]);
  if (files.length > 0) {
    left.push({
      what: `project state in ${root}: ${files.map((f) => relativeTo(root, f)).join(", ")}`,
      paths: files,
      command: `rm -rf ${files.map(shellWord).join(" ")}`,
    });
  }
  const top = await repoTop(root);
  if (!top) return left;
  const refs = (await git(top, ["for-each-ref", "--format=%(refname)", ...LIFELINE_REFS]))
    .split("\n").filter(Boolean);
  if (refs.length > 0) {
    const at = `git -C ${shellWord(top)}`;
    left.push({
      what:
        `${refs.length} git refs under refs/lifeline/ in ${top} (rollback backups, stable mark)`,
      paths: refs,
      command: `${at} for-each-ref --format='delete %(refname)' ${
        LIFELINE_REFS.join(" ")
      } | ${at} update-ref --stdin`,
    });
  }
  const exclude = await excludeTarget(root, { gitignore: false });
  const journal = joinPath(await git(top, ["rev-parse", "--absolute-git-dir"]), "lifeline");
  if (await pathExists(journal)) {
    left.push({
      what: "the rollback journal's directory",
      paths: [journal],
      command: `rm -rf ${shellWord(journal)}`,
    });
  }
  if (
    exclude && (await Deno.readTextFile(exclude.file).catch(() => "")).includes("# lifeline: begin")
  ) {
    left.push({
      what: "the block that keeps lifeline's state out of git",
      paths: [exclude.file],
      command: `sed -i.bak '/^# lifeline: begin/,/^# lifeline: end$/d' ${shellWord(exclude.file)}`,
    });
  }
  return left;
}

/** The backups `init` and `uninstall` made of these settings files. */
async function settingsBackups(paths: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const path of paths) {
    const dir = dirName(path);
    const prefix = `${baseName(path)}.bak-`;
    for (const name of await listNames(dir)) {
      if (name.startsWith(prefix)) found.push(joinPath(dir, name));
    }
  }
  return found.sort();
}

/** Everything lifeline leaves: each project's state, then the user's. */
export async function leftovers(
  env: Readonly<Record<string, string>>,
  { roots, settings }: { roots: readonly string[]; settings: readonly string[] },
): Promise<Leftover[]> {
  const left: Leftover[] = [];
  for (const root of roots) left.push(...await projectLeftovers(root));
  const backups = await settingsBackups(settings);
  if (backups.length > 0) {
    left.push({
      what: `${backups.length} backups of settings files (made before lifeline changed them)`,
      paths: backups,
      command: `rm ${backups.map(shellWord).join(" ")}`,
    });
  }
  const own = await existing([stateDir(env)]);
  if (own.length > 0) {
    left.push({
      what: "lifeline's state directory (its logs, locks, the project registry)",
      paths: own,
      command: `rm -rf ${shellWord(own[0]!)}`,
    });
  }
  const user = await existing([userConfigPath(env), killSwitchPath(env)]);
  if (user.length > 0) {
    left.push({
      what: "your lifeline config and the self-heal kill switch",
      paths: user,
      command: `rm ${user.map(shellWord).join(" ")}`,
    });
  }
  const binary = await onPath("lifeline", env.PATH);
  if (binary) {
    left.push({ what: "the lifeline binary", paths: [binary], command: `rm ${shellWord(binary)}` });
  }
  return left;
}
