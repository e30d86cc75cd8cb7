// Property: for random repository states (tracked, staged, unstaged, untracked, ignored, modes,
// CRLF under text=auto, symlinks, binary, deleted, intent-to-add, files where the stable commit
// has directories and the reverse; the repository's top or a subdirectory as the root), while
// lifeline's own state is being written, a rollback and then a restore give back the exact tree,
// index and modes; nothing outside the root and nothing under lifeline's own state changes; and a
// refused rollback changes nothing at all. `fail handle` and `fail restore` run in-process.
//
// LIFELINE_PROPERTY_RUNS=500 generates more states (the default keeps the run well under 60 s).
import assert from "node:assert/strict";
import fc from "fast-check";
import { appendJsonLine, writeFileAtomic } from "../lib/state/store.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { git } from "./helpers/git_repo.ts";
import { exactTree, indexState, inodes, OWN_STATE } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";
const RUNS = Number(Deno.env.get("LIFELINE_PROPERTY_RUNS") ?? 50);

/** Paths that collide: files where other states have directories, at the top and below "a". */
const PATHS = ["x", "y.txt", "a/x", "a/y.txt", "a/b", "a/b/z", "a/c", "b/q", "c", "c/d"];

type Content = { kind: "text"; text: string } | { kind: "crlf"; text: string } | {
  kind: "binary";
  bytes: number[];
};
const content: fc.Arbitrary<Content> = fc.oneof(
  fc.record({ kind: fc.constant("text" as const), text: fc.string({ maxLength: 12 }) }),
  fc.record({ kind: fc.constant("crlf" as const), text: fc.string({ maxLength: 12 }) }),
  fc.record({
    kind: fc.constant("binary" as const),
    bytes: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 16 }),
  }),
);

function bytesOf(c: Content): Uint8Array {
  if (c.kind === "binary") return new Uint8Array(c.bytes);
  return new TextEncoder().encode(c.kind === "crlf" ? `${c.text}\r\nline\r\n` : `${c.text}\n`);
}

/** What a file in a commit or in the work tree is. */
type Entry = { type: "file"; content: Content; mode: number } | { type: "link"; target: string };
const entry: fc.Arbitrary<Entry> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      type: fc.constant("file" as const),
      content,
      mode: fc.constantFrom(0o644, 0o755),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant("link" as const),
      target: fc.constantFrom("x", "../x", "nowhere", "a/b"),
    }),
  },
);

/** One step a user or an agent takes in the work tree. */
type Op =
  | { op: "write"; path: string; entry: Entry }
  | { op: "remove"; path: string }
  | { op: "chmod"; path: string; mode: number }
  | { op: "add" | "add-N" | "rm-cached" | "ignore"; path: string }
  | { op: "text-auto" };
const path = fc.constantFrom(...PATHS);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("write" as const), path, entry }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("remove" as const), path }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("chmod" as const),
      path,
      mode: fc.constantFrom(0o600, 0o444, 0o700, 0o640, 0o755),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constantFrom(
        "add" as const,
        "add-N" as const,
        "rm-cached" as const,
        "ignore" as const,
      ),
      path,
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: "text-auto" as const }) },
);

const scenario = fc.record({
  stable: fc.dictionary(path, entry, { maxKeys: 6 }),
  later: fc.dictionary(path, fc.option(entry), { maxKeys: 4 }),
  ops: fc.array(op, { maxLength: 10 }),
  subdir: fc.boolean(),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

/** Puts `e` at `path`, replacing whatever is there or in the way. */
async function put(repo: string, path: string, e: Entry): Promise<void> {
  const full = `${repo}/${path}`;
  const parts = path.split("/");
  for (let i = 1; i < parts.length; i++) {
    const dir = `${repo}/${parts.slice(0, i).join("/")}`;
    const info = await Deno.lstat(dir).catch(() => null);
    if (info && !info.isDirectory) await Deno.remove(dir);
  }
  await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
  await Deno.remove(full, { recursive: true }).catch(() => {});
  if (e.type === "link") return await Deno.symlink(e.target, full);
  await Deno.writeFile(full, bytesOf(e.content));
  await Deno.chmod(full, e.mode);
}

async function commitTree(repo: string, files: Record<string, Entry | null>, message: string) {
  for (const [p, e] of Object.entries(files)) {
    if (e) await put(repo, p, e);
    else await Deno.remove(`${repo}/${p}`, { recursive: true }).catch(() => {});
  }
  await git(repo, "add", "--all", "--", ".", ...OWN_STATE.map((d) => `:(exclude)a/${d}`));
  await git(repo, "commit", "--quiet", "--allow-empty", "-m", message);
}

async function apply(repo: string, o: Op): Promise<void> {
  const full = o.op === "text-auto" ? "" : `${repo}/${o.path}`;
  switch (o.op) {
    case "write":
      return await put(repo, o.path, o.entry);
    case "remove":
      return await Deno.remove(full, { recursive: true });
    case "chmod":
      if ((await Deno.lstat(full)).isFile) await Deno.chmod(full, o.mode);
      return;
    case "add":
      return void await git(repo, "add", "--", o.path);
    case "add-N":
      return void await git(repo, "add", "-N", "--", o.path);
    case "rm-cached":
      return void await git(repo, "rm", "--cached", "--quiet", "-r", "--", o.path);
    case "ignore":
      return await Deno.writeTextFile(`${repo}/.gitignore`, `/${o.path}\n`, { append: true });
    case "text-auto":
      return await Deno.writeTextFile(`${repo}/.gitattributes`, "* text=auto\n");
  }
}

/** `lifeline <args>` in this process, as a user would run it from `cwd`. */
/** `lifeline <args> --root <cwd>`, run in `cwd`: the root named, a subdirectory of the repository or its top. */
function cli(args: string[], cwd: string, home: string) {
  return runInProcess([...args, "--root", cwd], { cwd, env: { HOME: home } });
}

/** Another session's hooks, writing lifeline's state under `root` until stopped. */
function ownStateWriter(root: string) {
  let stop = false;
  let rounds = 0;
  const done = (async () => {
    while (!stop) {
      rounds++;
      await writeFileAtomic(`${root}/sessions/s2/heartbeat`, `${rounds}\n`, { root });
      await appendJsonLine(`${root}/logs/error-recovery.log`, { round: rounds }, { root });
      await new Promise((r) => setTimeout(r, 0));
    }
  })();
  return {
    async stop() {
      stop = true;
      await done;
      return rounds;
    },
  };
}

const REFUSALS = [
  /^the index has unmerged paths/,
  /^a nested git repository is in the way/,
  /^there is no stable commit/,
];

async function check(s: Scenario, dir: string, stats: Record<string, number>): Promise<void> {
  const repo = `${dir}/repo`;
  await Deno.mkdir(repo, { recursive: true });
  await git(repo, "init", "--quiet", "--initial-branch=main");
  for (
    const [k, v] of [["user.email", "t@example.com"], ["user.name", "T"], [
      "commit.gpgsign",
      "false",
    ]]
  ) {
    await git(repo, "config", k!, v!);
  }
  const prefix = s.subdir ? "a" : "";
  const root = s.subdir ? `${repo}/a` : repo;
  await commitTree(repo, s.stable, "stable");
  await git(repo, "tag", "stable-1");
  await commitTree(repo, s.later, "later");
  for (const o of s.ops) await apply(repo, o).catch(() => {}); // a step that git refuses is skipped
  await Deno.mkdir(`${root}/.claims`, { recursive: true });
  await Deno.writeTextFile(`${root}/.claims/static.lock`, "held\n", { mode: 0o640 });
  assert.equal((await cli(["fail", "init"], root, `${dir}/home`)).code, 0);
  const skip = [...OWN_STATE.map((d) => (prefix ? `${prefix}/${d}` : d))];
  const outside = s.subdir ? await exactTree(repo, { skip: ["a"] }) : null;
  const before = await exactTree(repo, { skip });
  const status = await indexState(repo, prefix);
  const claim = await exactTree(`${root}/.claims`);
  const claimInode = await inodes([`${root}/.claims/static.lock`]);

  const writer = ownStateWriter(root);
  let rounds = 0;
  let rollback: { done: boolean; backup?: string; refused?: string } = { done: false };
  try {
    const handled = await cli(
      ["fail", "handle", "--task", "P", "--skill", "s", "--error", "x", "--unstable", "--json"],
      root,
      `${dir}/home`,
    );
    assert.ok(handled.code === 0, handled.stderr);
    rollback = JSON.parse(handled.stdout).rollback;
    if (outside) {
      assert.deepEqual(await exactTree(repo, { skip: ["a"] }), outside, "outside the root");
    }
    if (rollback.done) {
      const back = await cli(["fail", "restore", rollback.backup!], root, `${dir}/home`);
      assert.equal(back.code, 0, back.stderr);
    } else {
      assert.ok(REFUSALS.some((r) => r.test(rollback.refused ?? "")), rollback.refused);
    }
  } finally {
    rounds = await writer.stop();
  }
  const kind = rollback.done
    ? (s.subdir ? "rolled back below the top" : "rolled back at the top")
    : "refused";
  stats[kind] = (stats[kind] ?? 0) + 1;
  assert.deepEqual(await exactTree(repo, { skip }), before);
  assert.equal(await indexState(repo, prefix), status);
  if (outside) assert.deepEqual(await exactTree(repo, { skip: ["a"] }), outside);
  assert.deepEqual(await exactTree(`${root}/.claims`), claim);
  assert.deepEqual(await inodes([`${root}/.claims/static.lock`]), claimInode);
  const lines = (await Deno.readTextFile(`${root}/logs/error-recovery.log`)).trim().split("\n");
  assert.equal(lines.length, rounds, "no line of the other session's log lost");
  assert.equal(await Deno.readTextFile(`${root}/sessions/s2/heartbeat`), `${rounds}\n`);
}

Deno.test({
  name: "property: rollback then restore gives back the exact tree, index and modes",
  ignore: IGNORE,
  async fn() {
    const stats: Record<string, number> = {
      "rolled back at the top": 0,
      "rolled back below the top": 0,
      refused: 0,
    };
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(scenario, (s) => withTempDir((dir) => check(s, dir, stats))),
      { numRuns: RUNS },
    );
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    Deno.stderr.writeSync(
      new TextEncoder().encode(
        `property: ${RUNS} states in ${seconds} s: ${JSON.stringify(stats)}\n`,
      ),
    );
    assert.ok(stats["rolled back at the top"]! > 0 && stats["rolled back below the top"]! > 0);
  },
});
