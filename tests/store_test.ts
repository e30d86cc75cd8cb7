import assert from "node:assert/strict";
import {
  appendJsonLine,
  jsonCodec,
  LockTimeoutError,
  numberCodec,
  readJsonLines,
  readLines,
  readState,
  updateState,
  withLock,
  writeFileAtomic,
} from "../lib/state/store.ts";
import { REPO_DIR } from "./helpers/lifeline.ts";
import { listDir, withTempDir } from "./helpers/temp.ts";

const counter = jsonCodec((value) => {
  const count = (value as { count?: unknown }).count;
  if (typeof count !== "number") throw new Error("not a counter");
  return { count };
});

Deno.test("writeFileAtomic creates parent directories and leaves no temp file", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/a/b/state.json`;
    await writeFileAtomic(path, "{}\n", { root: dir });
    await writeFileAtomic(path, '{"x":1}\n', { root: dir });
    assert.equal(await Deno.readTextFile(path), '{"x":1}\n');
    const names = await listDir(`${dir}/a/b`);
    assert.deepEqual(names, ["state.json"]);
  });
});

Deno.test("readState tells missing, ok and corrupt apart without moving anything", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/n.txt`;
    assert.deepEqual(await readState(path, numberCodec, { root: dir }), { kind: "missing" });
    await Deno.writeTextFile(path, "42\n");
    assert.deepEqual(await readState(path, numberCodec, { root: dir }), { kind: "ok", value: 42 });
    await Deno.writeTextFile(path, "forty-two");
    const corrupt = await readState(path, numberCodec, { root: dir });
    assert.equal(corrupt.kind, "corrupt");
    assert.equal(await Deno.readTextFile(path), "forty-two");
  });
});

Deno.test("updateState quarantines a corrupt file, keeps its bytes, and starts from defaults", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/counter.json`;
    await Deno.writeTextFile(path, '{"count": 7'); // torn
    const now = Date.UTC(2026, 10, 30, 12, 0, 0);
    const result = await updateState(path, counter, (c) => ({ count: (c?.count ?? 0) + 1 }), {
      root: dir,
      waitMs: 1000,
      now,
    });
    assert.equal(result.previous.kind, "corrupt");
    const movedTo = result.previous.kind === "corrupt" ? result.previous.movedTo : undefined;
    assert.equal(movedTo, `${path}.corrupt-2026-11-30T120000000Z`);
    assert.equal(await Deno.readTextFile(movedTo!), '{"count": 7');
    assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), { count: 1 });
  });
});

Deno.test("updateState writes nothing when the update returns undefined", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/counter.json`;
    await Deno.writeTextFile(path, '{"count":3}');
    const before = (await Deno.stat(path)).mtime;
    const result = await updateState(path, counter, () => undefined, {
      root: dir,
      waitMs: 100,
      now: 0,
    });
    assert.equal(result.written, false);
    assert.deepEqual(result.value, { count: 3 });
    assert.deepEqual((await Deno.stat(path)).mtime, before);
  });
});

Deno.test("withLock times out while another holder keeps the lock, then succeeds", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/state.json`;
    let release!: () => void;
    const held = withLock(path, () => new Promise<void>((resolve) => (release = resolve)), {
      root: dir,
      waitMs: 0,
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const started = Date.now();
    await assert.rejects(
      withLock(path, async () => {}, { root: dir, waitMs: 150 }),
      LockTimeoutError,
    );
    assert.ok(Date.now() - started >= 140, "waited for the bounded time");
    await assert.rejects(
      withLock(path, async () => {}, { root: dir, waitMs: 0 }),
      LockTimeoutError,
    );
    release();
    await held;
    assert.equal(
      await withLock(path, () => Promise.resolve("got it"), { root: dir, waitMs: 0 }),
      "got it",
    );
  });
});

Deno.test("100 concurrent in-process updates end exact", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/counter.json`;
    await Promise.all(
      Array.from(
        { length: 100 },
        () =>
          updateState(path, counter, (c) => ({ count: (c?.count ?? 0) + 1 }), {
            root: dir,
            waitMs: 30_000,
            now: 0,
          }),
      ),
    );
    assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), { count: 100 });
  });
});

Deno.test("50 processes updating one counter through the kernel lock end exact", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/counter.json`;
    const children = Array.from({ length: 50 }, () =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "--allow-read",
          "--allow-write",
          `${REPO_DIR}/tests/helpers/store_worker.ts`,
          "increment",
          path,
          "2",
        ],
        stdout: "null",
        stderr: "piped",
      }).output());
    for (const result of await Promise.all(children)) {
      assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
    }
    assert.deepEqual(JSON.parse(await Deno.readTextFile(path)), { count: 100 });
  });
});

Deno.test({
  name: "kill -9 in the middle of atomic writes never leaves an unparseable file",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withTempDir(async (dir) => {
      const path = `${dir}/doc.json`;
      let lastSeq = -1;
      for (let round = 0; round < 12; round++) {
        const child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--quiet",
            "--allow-read",
            "--allow-write",
            `${REPO_DIR}/tests/helpers/store_worker.ts`,
            "write-loop",
            path,
          ],
          stdout: "piped",
          stderr: "null",
        }).spawn();
        const reader = child.stdout.getReader();
        await reader.read(); // "ready"
        reader.releaseLock();
        await new Promise((resolve) => setTimeout(resolve, 30 + Math.random() * 120));
        child.kill("SIGKILL");
        await child.status;
        await child.stdout.cancel();
        const document = JSON.parse(await Deno.readTextFile(path));
        assert.equal(typeof document.seq, "number");
        assert.ok(document.filler.length >= 200_000);
        lastSeq = document.seq;
      }
      assert.ok(lastSeq >= 0);
      // Proof that kills landed mid-write: the writer's unfinished temp files are still there.
      const leftovers = (await listDir(dir)).filter((name) => name.endsWith(".tmp"));
      assert.ok(leftovers.length >= 1, "no kill landed during a write");
    });
  },
});

Deno.test("appendJsonLine writes one line per record, and concurrent appends never interleave", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/logs/x.log`;
    await Promise.all(
      Array.from(
        { length: 200 },
        (_, i) => appendJsonLine(path, { i, text: "y".repeat(300) }, { root: dir }),
      ),
    );
    const lines = (await Deno.readTextFile(path)).trimEnd().split("\n");
    assert.equal(lines.length, 200);
    const seen = new Set(lines.map((line) => JSON.parse(line).i));
    assert.equal(seen.size, 200);
  });
});

Deno.test("appendJsonLine shortens long strings to keep a record one small write", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/x.log`;
    await appendJsonLine(
      path,
      { message: "z".repeat(10_000), nested: { deep: "q".repeat(5000) } },
      {
        root: dir,
      },
    );
    const line = (await Deno.readTextFile(path)).trimEnd();
    assert.ok(line.length < 4096, `line is ${line.length} characters`);
    assert.equal(JSON.parse(line).message.length, 601);
  });
});

Deno.test("readJsonLines skips torn, blank and oversized lines", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/t.jsonl`;
    const big = JSON.stringify({ big: "b".repeat(5000) });
    await Deno.writeTextFile(
      path,
      ['{"a":1}', "", "not json", big, '{"a":2}', '{"a":3'].join("\n"),
    );
    const skipped = { count: 0 };
    const rows = [];
    for await (const row of readJsonLines(path, { root: dir, maxLineLength: 1000, skipped })) {
      rows.push(row);
    }
    assert.deepEqual(rows, [{ a: 1 }, { a: 2 }]);
    assert.equal(skipped.count, 3);
  });
});

Deno.test("readLines streams lines across chunk boundaries, UTF-8 intact", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/lines.txt`;
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i} · ∙ ❯ ${"é".repeat(i % 50)}`);
    await Deno.writeTextFile(path, lines.join("\n") + "\n");
    const read = [];
    for await (const line of readLines(path, { root: dir })) read.push(line);
    assert.deepEqual(read, lines);
  });
});
