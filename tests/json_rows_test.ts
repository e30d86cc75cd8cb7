import assert from "node:assert/strict";
import fc from "fast-check";
import { JsonRowSplitter } from "../lib/claude/json_rows.ts";

/** Splits `text` fed in chunks of the given sizes; returns the rows as text, and what was skipped. */
function split(
  text: string,
  chunkSizes: number[],
  limits: { maxStringBytes: number; maxRowBytes?: number; wanted?: (head: string) => boolean },
) {
  const decoder = new TextDecoder();
  const rows: string[] = [];
  const skipped: string[] = [];
  const splitter = new JsonRowSplitter({
    wanted: (head) => limits.wanted?.(decoder.decode(head)) ?? true,
    row: (bytes) => rows.push(decoder.decode(bytes)),
    skipped: (reason) => skipped.push(reason),
  }, {
    maxStringBytes: limits.maxStringBytes,
    maxRowBytes: limits.maxRowBytes ?? 1 << 20,
    headBytes: 16,
  });
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const size = Math.max(1, chunkSizes[i % chunkSizes.length] ?? 1);
    splitter.push(bytes.subarray(at, at + size));
    at += size;
  }
  splitter.end();
  return { rows, skipped };
}

/** `value` with every string longer than `max` bytes cut the way the splitter cuts it. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  }
  return [];
}

const rowsArb = fc.array(fc.dictionary(fc.string(), fc.jsonValue()), {
  minLength: 1,
  maxLength: 5,
});
const chunksArb = fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 });

Deno.test("rows come out exactly as they went in when no string is longer than the bound", () => {
  fc.assert(fc.property(rowsArb, chunksArb, (rows, chunks) => {
    const text = rows.map((row) => JSON.stringify(row)).join("\n") + "\n";
    const out = split(text, chunks, { maxStringBytes: 1 << 20 });
    assert.deepEqual(out.rows, rows.map((row) => JSON.stringify(row)));
  }));
});

/** Rows of strings of any characters (quotes, backslashes, controls, astral), nested in arrays. */
const stringRowsArb = fc.array(
  fc.array(
    fc.oneof(
      fc.string({ unit: "binary" }),
      fc.string({ unit: fc.constantFrom("\\", '"', "u", "0", "\n", "é", "😀") }),
      fc.array(fc.string({ unit: "binary" })),
      fc.integer(),
    ),
  ),
  { minLength: 1, maxLength: 5 },
);

Deno.test("with long strings cut, every row still parses, and each string is kept or cut to its start", () => {
  fc.assert(
    fc.property(stringRowsArb, chunksArb, fc.integer({ min: 1, max: 12 }), (rows, chunks, max) => {
      const text = rows.map((row) => JSON.stringify(row)).join("\n") + "\n";
      const out = split(text, chunks, { maxStringBytes: max });
      assert.equal(out.rows.length, rows.length);
      for (const [i, row] of out.rows.entries()) {
        const parsed = JSON.parse(row);
        const before = strings(rows[i]);
        const after = strings(parsed);
        assert.equal(after.length, before.length);
        for (const [j, cut] of after.entries()) {
          const whole = before[j]!;
          const marker = /…\[\+(\d+) bytes\]$/.exec(cut);
          if (!marker) {
            assert.equal(cut, whole);
            continue;
          }
          // What is kept is a start of the original (a cut character may become U+FFFD).
          const kept = cut.slice(0, marker.index).replace(/\uFFFD+$/, "");
          assert.ok(whole.startsWith(kept), `${JSON.stringify(cut)} from ${JSON.stringify(whole)}`);
        }
      }
    }),
  );
});

Deno.test("a 200 KB string is cut to the bound, and says how much was left out", () => {
  const content = "x".repeat(200_000);
  const row = JSON.stringify({ type: "assistant", input: { file_path: "/a.ts", content } });
  const { rows } = split(row + "\n", [65536], { maxStringBytes: 100 });
  const parsed = JSON.parse(rows[0]!);
  assert.equal(parsed.input.file_path, "/a.ts");
  assert.equal(parsed.input.content, `${"x".repeat(100)}…[+199900 bytes]`);
  assert.ok(rows[0]!.length < 300);
});

Deno.test("unwanted rows are skipped undecoded; torn and oversized ones are reported", () => {
  const text = [
    JSON.stringify({ type: "blob", data: "y".repeat(1000) }),
    '{"type":"blob","data":"torn',
    JSON.stringify({ type: "user", text: "z".repeat(50) }),
    JSON.stringify({ type: "user", many: Array.from({ length: 100 }, (_, i) => `v${i}`) }),
  ].join("\n") + "\n";
  const out = split(text, [7], {
    maxStringBytes: 64,
    maxRowBytes: 200,
    wanted: (head) => !head.includes('"blob"'),
  });
  assert.deepEqual(out.skipped, ["unwanted", "torn", "oversized"]);
  assert.equal(out.rows.length, 1);
  assert.equal(JSON.parse(out.rows[0]!).type, "user");
});
