// A rollback killed at any moment (the whole process group, git included), while another
// session's hooks keep writing lifeline's state, leaves a state that the next run finishes and
// `fail restore` undoes exactly, with no lock left behind. An older version's set-aside copy is
// recovered once, without writing stale copies over newer files.
import assert from "node:assert/strict";
import { commitAll, git } from "./helpers/git_repo.ts";
import { childEnv, lifelineCommand } from "./helpers/lifeline.ts";
import {
  firstLine,
  handle,
  lifeline,
  restore,
  setUp,
  state,
  stateWriter,
} from "./helpers/harness.ts";
import { exactTree, indexState, OWN_STATE as OWN } from "./helpers/repo_state.ts";
import { withTempDir } from "./helpers/temp.ts";

const IGNORE = Deno.build.os === "windows";
/** Kill points; LIFELINE_KILL_POINTS=100 tries more. */
const POINTS = Number(Deno.env.get("LIFELINE_KILL_POINTS") ?? 16);

/** `fail handle` in a process group of its own, so a kill takes git's children with it. */
function spawnGroup(dir: string, args: string[]): Deno.ChildProcess {
  const { program, args: base } = lifelineCommand();
  return new Deno.Command("setsid", {
    args: [program, ...base, ...args],
    cwd: `${dir}/repo`,
    clearEnv: true,
    env: childEnv({ HOME: `${dir}/home` }),
    stdout: "null",
    stderr: "null",
  }).spawn();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function step(repo: string): Promise<string | null> {
  return await Deno.readTextFile(`${repo}/.git/lifeline/journal.json`).then(
    (text) => JSON.parse(text).step as string,
    () => null,
  );
}

/** Where a killed run stopped: its journal's step, and whether it left git's index lock. */
async function leftBehind(repo: string): Promise<string> {
  const journal = (await step(repo)) ?? "no journal";
  const lock = await Deno.lstat(`${repo}/.git/index.lock`).then(() => "+index.lock", () => "");
  return journal + lock;
}

Deno.test({
  name: "kill -9 of the process group at many points: the next run finishes, restore is exact",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const files: Record<string, string> = {};
      for (let i = 0; i < 200; i++) files[`src/f${i}.txt`] = `base ${i}\n`;
      const repo = await setUp(dir, files, { budget: 1000 });
      for (let i = 0; i < 200; i += 2) {
        await Deno.writeTextFile(`${repo}/src/f${i}.txt`, `later ${i}\n`);
      }
      await commitAll(repo, "later work");
      for (let i = 1; i < 200; i += 2) {
        await Deno.writeTextFile(`${repo}/src/f${i}.txt`, `wip ${i}\n`);
      }
      await Deno.writeTextFile(`${repo}/src/new.txt`, "untracked work\n");
      await git(repo, "add", "src/f1.txt");
      const original = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);
      const writer = stateWriter(repo, "beat");
      assert.equal(await firstLine(writer), "ready");
      const started = performance.now();
      const first = await handle(dir, "K0");
      const fullMs = performance.now() - started;
      assert.equal((await restore(dir, first.rollback.backup)).code, 0);
      const seen: Record<string, number> = {};
      try {
        for (let k = 0; k < POINTS; k++) {
          const child = spawnGroup(dir, [
            "fail",
            "handle",
            "--task",
            `K${k + 1}`,
            "--skill",
            "s",
            "--error",
            "x",
            "--unstable",
          ]);
          // Half the kills at times spread over a whole run, half while the git steps run.
          if (k % 2 === 0) await sleep((fullMs * k) / POINTS);
          else {
            const deadline = performance.now() + fullMs * 3;
            while ((await step(repo)) !== "apply" && performance.now() < deadline) await sleep(1);
            await sleep((k % 8) * 4);
          }
          try {
            Deno.kill(-child.pid, "SIGKILL");
          } catch {
            // finished first
          }
          await child.status;
          const where = await leftBehind(repo);
          seen[where] = (seen[where] ?? 0) + 1;
          // The next command finishes what the killed one left, then the restore undoes it.
          const backups = JSON.parse((await lifeline(dir, ["fail", "list", "--json"])).stdout)
            .backups as { ref: string; task: string }[];
          const mine = backups.find((b) => b.task === `K${k + 1}`);
          if (mine) {
            const back = await restore(dir, mine.ref);
            assert.equal(back.code, 0, `${where}: ${back.stderr}`);
          } else {
            assert.equal((await lifeline(dir, ["fail", "init"])).code, 0);
          }
          assert.deepEqual(await exactTree(repo, { skip: OWN }), original, where);
          assert.equal(await indexState(repo), status, where);
          assert.equal(await leftBehind(repo), "no journal", "nothing left behind");
        }
      } finally {
        writer.kill("SIGKILL");
        await writer.status;
        await writer.stdout.cancel();
      }
      Deno.stderr.writeSync(new TextEncoder().encode(
        `kill points: ${POINTS} in runs of ${Math.round(fullMs)} ms: ${JSON.stringify(seen)}\n`,
      ));
      const count = Number(await Deno.readTextFile(`${repo}/sessions/agent2/fail-count-x.txt`));
      const lines = (await Deno.readTextFile(`${repo}/logs/error-recovery.log`)).trim().split("\n");
      assert.ok(
        count - lines.length <= 1 && count >= lines.length - 1,
        `${count} vs ${lines.length}`,
      );
      JSON.parse(await Deno.readTextFile(`${repo}/.EnjoyHarness/handle-failure.json`));
    });
  },
});

Deno.test({
  name: "another git command holding index.lock is waited for, not broken",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, undefined, { budget: 1000 });
      await Deno.writeTextFile(`${repo}/README.md`, "changed\n");
      await Deno.writeTextFile(`${repo}/.git/index.lock`, "someone else's");
      setTimeout(() => Deno.remove(`${repo}/.git/index.lock`), 1000);
      const out = await handle(dir, "G1");
      assert.equal(out.rollback.done, true, JSON.stringify(out.rollback));
      assert.equal(await Deno.readTextFile(`${repo}/README.md`), "hello\n");
    });
  },
});

Deno.test({
  name: "a git step that fails half-way is undone: the repository is as it was, the backup kept",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "a.txt": "stable\n" }, { budget: 1000 });
      await Deno.writeTextFile(`${repo}/a.txt`, "committed later\n");
      await commitAll(repo, "later");
      await Deno.writeTextFile(`${repo}/a.txt`, "uncommitted work\n");
      await Deno.writeTextFile(`${repo}/new.txt`, "untracked\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);
      // Another git command is updating the branch: moving HEAD fails after the work tree moved.
      await Deno.writeTextFile(`${repo}/.git/refs/heads/main.lock`, "someone else's\n");
      const out = await handle(dir, "F1");
      assert.equal(out.rollback.status, "failed", JSON.stringify(out.rollback));
      assert.equal(out.rollback.undone, true);
      assert.match(out.rollback.failed, /main\.lock/);
      assert.match(out.rollback.backup, /^refs\/lifeline\/backups\/F1-/);
      assert.equal((await state(repo)).tasks.F1, 1, "counted");
      assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
      assert.equal(await indexState(repo), status);
      assert.equal(await leftBehind(repo), "no journal");
      assert.equal(
        await Deno.readTextFile(`${repo}/.git/refs/heads/main.lock`),
        "someone else's\n",
      );
    });
  },
});

Deno.test({
  name: "an older version's set-aside copy is put back once, never over newer files",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, undefined, { budget: 1000 });
      const codeError = ["fail", "handle", "--task", "T1", "--skill", "s", "--error", "TypeError"];
      assert.equal((await lifeline(dir, codeError)).code, 0);
      const harness = await Deno.readTextFile(`${repo}/.EnjoyHarness/handle-failure.json`);
      // What an older lifeline killed right after its reset left: the only copy of the harness
      // in the git directory, and an older copy of a log that other sessions kept writing.
      const aside = `${repo}/.git/lifeline/set-aside`;
      await Deno.mkdir(`${aside}/logs`, { recursive: true });
      await Deno.rename(`${repo}/.EnjoyHarness`, `${aside}/.EnjoyHarness`);
      await Deno.rename(`${repo}/.trace`, `${aside}/.trace`);
      await Deno.writeTextFile(`${aside}/logs/error-recovery.log`, "1\n2\n3\n");
      await Deno.mkdir(`${repo}/logs`);
      await Deno.writeTextFile(`${repo}/logs/error-recovery.log`, "1\n2\n3\n4\n5\n6\n");
      await Deno.writeTextFile(`${repo}/.git/lifeline/set-aside.complete`, "12\n");

      const init = await lifeline(dir, ["fail", "init", "--json"]);
      assert.equal(init.code, 0, init.stderr);
      assert.deepEqual(JSON.parse(init.stdout).created, [], "put back, not created anew");
      assert.equal(await Deno.readTextFile(`${repo}/.EnjoyHarness/handle-failure.json`), harness);
      assert.equal(
        await Deno.readTextFile(`${repo}/logs/error-recovery.log`),
        "1\n2\n3\n4\n5\n6\n",
        "the newer log is kept",
      );
      await assert.rejects(Deno.lstat(aside), Deno.errors.NotFound);
      await assert.rejects(Deno.lstat(`${aside}.complete`), Deno.errors.NotFound);
      await assert.rejects(
        Deno.lstat(`${repo}/.EnjoyHarness/handle-failure.json.lock`),
        Deno.errors.NotFound,
        "lock files are not written back",
      );
      assert.equal((await lifeline(dir, codeError)).code, 0);
      assert.equal((await state(repo)).tasks.T1, 2, "counting goes on from there");
    });
  },
});

/** Temporary files of a restore's writes, wherever they are under `dir`. */
async function restoreTemps(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (path: string) => {
    try {
      for await (const entry of Deno.readDir(path)) {
        const full = `${path}/${entry.name}`;
        if (entry.name.startsWith(".lifeline-restore-")) found.push(full);
        else if (entry.isDirectory) await walk(full);
      }
    } catch {
      // removed while it was read
    }
  };
  await walk(dir);
  return found;
}

Deno.test({
  name:
    "kill -9 while restore writes a file: nothing is left in the project, the next restore ends it",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const repo = await setUp(dir, { "big/data.bin": "stable\n", "a.txt": "1\n" });
      // 16 MB: long enough to write that the kill lands while it is being written.
      const chunks = Array.from(
        { length: 256 },
        () => crypto.getRandomValues(new Uint8Array(65536)),
      );
      await Deno.writeFile(`${repo}/big/data.bin`, await new Blob(chunks).bytes());
      await Deno.writeTextFile(`${repo}/a.txt`, "uncommitted\n");
      const before = await exactTree(repo, { skip: OWN });
      const status = await indexState(repo);
      const { rollback } = await handle(dir, "R1");
      let caught: string[] = [];
      for (let attempt = 0; attempt < 5 && caught.length === 0; attempt++) {
        const child = spawnGroup(dir, ["fail", "restore", rollback.backup]);
        const deadline = performance.now() + 20_000;
        let done = false;
        child.status.then(() => (done = true));
        while (!done && performance.now() < deadline) {
          caught = await restoreTemps(repo);
          if (caught.length > 0) break;
        }
        try {
          Deno.kill(-child.pid, "SIGKILL");
        } catch {
          // finished first
        }
        await child.status;
        if (caught.length === 0) {
          // It finished before a write was caught: roll back again and retry.
          const again = await handle(dir, `R${attempt + 2}`);
          rollback.backup = again.rollback.backup;
        }
      }
      assert.ok(caught.length > 0, "a write was caught half-way");
      const inProject = (await restoreTemps(repo)).filter((p) => !p.startsWith(`${repo}/.git/`));
      assert.deepEqual(inProject, [], "no temporary file in the project");
      const back = await restore(dir, rollback.backup);
      assert.equal(back.code, 0, back.stderr);
      assert.deepEqual(await restoreTemps(repo), []);
      assert.deepEqual(await exactTree(repo, { skip: OWN }), before);
      assert.equal(await indexState(repo), status);
    });
  },
});
