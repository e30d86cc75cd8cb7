/**
 * Real git repositories for tests.
 *
 * @module
 */

/** Runs git in `dir`; throws with stderr on failure. */
export async function git(dir: string, ...args: string[]): Promise<string> {
  const result = await new Deno.Command("git", { args, cwd: dir, stdout: "piped", stderr: "piped" })
    .output();
  if (!result.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(result.stderr)}`);
  }
  return new TextDecoder().decode(result.stdout).trim();
}

/** A repository with one commit (files given) tagged `stable-1`. */
export async function makeRepo(
  dir: string,
  files: Record<string, string> = { "README.md": "hello\n" },
): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  await git(dir, "init", "--quiet", "--initial-branch=main");
  await git(dir, "config", "user.email", "test@example.com");
  await git(dir, "config", "user.name", "Test");
  await git(dir, "config", "commit.gpgsign", "false");
  // lifeline's state stays out of commits unless a test adds it on purpose (git add -f).
  await Deno.writeTextFile(
    `${dir}/.git/info/exclude`,
    [".EnjoyHarness/", ".trace/", "sessions/", "logs/", ".lifeline/"].join("\n") + "\n",
  );
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(`${dir}/${path}`.replace(/\/[^/]*$/, ""), { recursive: true });
    await Deno.writeTextFile(`${dir}/${path}`, text);
  }
  await git(dir, "add", "--all");
  await git(dir, "commit", "--quiet", "-m", "stable base");
  await git(dir, "tag", "stable-1");
  return dir;
}

/** Commits everything with a message. */
export async function commitAll(dir: string, message: string): Promise<void> {
  await git(dir, "add", "--all");
  await git(dir, "commit", "--quiet", "-m", message);
}

/** Every file under `dir` (but .git and lifeline's state) with its bytes and mode. */
export async function treeSnapshot(
  dir: string,
  skip = [".git", ".EnjoyHarness", ".trace", "sessions", "logs", ".lifeline"],
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (path: string, rel: string) => {
    for await (const entry of Deno.readDir(path)) {
      const relative = rel ? `${rel}/${entry.name}` : entry.name;
      if (!rel && skip.includes(entry.name)) continue;
      const full = `${path}/${entry.name}`;
      if (entry.isDirectory) {
        await walk(full, relative);
      } else {
        const bytes = await Deno.readFile(full);
        const mode = ((await Deno.lstat(full)).mode ?? 0) & 0o111 ? "x" : "-";
        out[relative] = `${mode}:${
          Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
        }`;
      }
    }
  };
  await walk(dir, "");
  return out;
}
