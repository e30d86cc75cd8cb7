// Check-then-use races, run as a racer would run them: a process swaps a state file for a FIFO,
// or a state directory for a link to somewhere else, as fast as it can, while lifeline reads and
// writes there. Real processes, real FIFOs, real links.
import assert from "node:assert/strict";
import { REPO_DIR } from "./helpers/lifeline.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";
import { appendText, withLock, writeFileAtomic } from "../lib/state/store.ts";

const IGNORE = Deno.build.os !== "linux";

/** Starts the racer (helpers/swapper.ts) and waits for its first swap. */
async function startSwapper(args: string[]): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${REPO_DIR}/tests/helpers/swapper.ts`, ...args],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  assert.match(new TextDecoder().decode(value), /ready/);
  return child;
}

async function stop(child: Deno.ChildProcess): Promise<void> {
  try {
    child.kill("SIGKILL");
  } catch { /* gone */ }
  await child.stdout.cancel().catch(() => {});
  await child.status;
}

/** Runs helpers/race_reader.ts for `ms`; its counts, or null when it was still blocked at `deadlineMs`. */
async function readFor(
  reader: string,
  path: string,
  root: string,
  { ms = 1500, deadlineMs = 15_000 } = {},
): Promise<{ ok: number; refused: number; missing: number } | null> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${REPO_DIR}/tests/helpers/race_reader.ts`, reader, path, root, `${ms}`],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), deadlineMs);
  const out = await child.output();
  clearTimeout(timer);
  if (out.signal === "SIGKILL") return null;
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

Deno.test({
  name: "a FIFO swapped in between the check and the open blocks no reader of state",
  ignore: IGNORE,
  fn: async (t) => {
    const cases: [string, string, string][] = [
      // reader, file (below the root), what it holds
      ["small", "sessions/a/status", "alive\n"],
      ["state-sync", "sessions/a/ralph.json", "{}\n"],
      ["state", "sessions/a/session.json", "{}\n"],
      ["transcript", "transcripts/t.jsonl", '{"type":"user"}\n'],
      ["config", ".lifeline/config.json", "{}\n"],
    ];
    for (const [reader, file, text] of cases) {
      await t.step(`${reader}: ${file}`, async () => {
        await withTempDir(async (root) => {
          const path = `${root}/${file}`;
          await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
          await Deno.writeTextFile(path, text);
          const swapper = await startSwapper(["fifo", path, text]);
          try {
            const counts = await readFor(reader, path, root);
            assert.ok(counts, `the ${reader} reader was still blocked in an open after 15 s`);
            assert.ok(counts.ok > 0, `no read succeeded: ${JSON.stringify(counts)}`);
          } finally {
            await stop(swapper);
          }
        });
      });
    }
  },
});

Deno.test({
  // Deno has no openat, and the process's working directory cannot stand in for one (test workers
  // and asynchronous calls share it): a write can land through a directory swapped for a link
  // between its check and its use. It is never taken for done: the swap, or where the file went
  // (the kernel's name for it), is seen after it, and the write fails.
  name:
    "a directory swapped for a link between the check and the write: a write that lands outside fails",
  ignore: IGNORE,
  fn: async (t) => {
    const writers: [string, (path: string, root: string) => Promise<unknown>][] = [
      ["writeFileAtomic", (path, root) => writeFileAtomic(path, "1\n", { root })],
      ["appendText", (path, root) => appendText(path, "line\n", { root })],
      ["withLock", (path, root) => withLock(path, () => Promise.resolve(), { root, waitMs: 0 })],
    ];
    for (const [name, write] of writers) {
      await t.step(name, async () => {
        await withTempDir(async (dir) => {
          const root = `${dir}/project`;
          const outside = `${dir}/outside`;
          await Deno.mkdir(`${root}/sessions/s1`, { recursive: true });
          await Deno.mkdir(outside);
          const swapper = await startSwapper(["dir", `${root}/sessions/s1`, outside]);
          let written = 0;
          const landed: number[] = [];
          try {
            for (const until = Date.now() + 1500; Date.now() < until;) {
              const before = (await listDir(outside)).length;
              const ok = await write(`${root}/sessions/s1/heartbeat`, root).then(
                () => true,
                () => false,
              );
              if (ok) written++;
              if (ok && (await listDir(outside)).length > before) landed.push(written);
            }
          } finally {
            await stop(swapper);
          }
          assert.ok(written > 0, "no write went through");
          assert.deepEqual(landed, [], `${name} said done for a write that landed outside`);
        });
      });
    }
  },
});
