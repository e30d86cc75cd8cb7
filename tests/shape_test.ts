// A shape must accept exactly the values its zod twin accepts, and give exactly what zod's parse
// gives (keys in the same order): the hooks decide with the shape alone, and only a rejection is
// explained by zod. Checked on random shapes with random and odd values, and on the hot-path
// shapes with every real payload of the fixtures and mutations of them.
import assert from "node:assert/strict";
import fc from "fast-check";
import * as z from "zod";
import {
  array,
  boolean,
  literal,
  looseObject,
  nullable,
  number,
  optional,
  parseShape,
  REJECTED,
  safeParseShape,
  type Shape,
  string,
  union,
  unknown,
} from "../lib/core/shape.ts";
import { zodSchema } from "../lib/core/shape_zod.ts";
import { HOOK_INPUT_SHAPES, OTHER_INPUT_SHAPE } from "../lib/claude/hook_io.ts";
import { nextSessionRecord, SESSION_RECORD_SHAPE } from "../lib/sessions/registry.ts";
import { ADVICE_SHAPE } from "../lib/advice/outbox.ts";
import { TRACKER_SHAPE } from "../lib/advice/model_fallback.ts";
import { emptyTracker } from "../lib/advice/model_fallback_policy.ts";
import { hookCaptures, hookScenarios } from "./helpers/fixtures.ts";

const RUNS = Number(Deno.env.get("LIFELINE_PROPERTY_RUNS") ?? 3000);

/** Deep equality with the same prototypes, the same `-0`s, and the same key order throughout. */
function assertSame(actual: unknown, expected: unknown, path = "value"): void {
  assert.deepStrictEqual(actual, expected, path);
  if (typeof actual !== "object" || actual === null) return;
  const keys = Reflect.ownKeys(actual);
  assert.deepEqual(keys, Reflect.ownKeys(expected as object), `${path}: key order`);
  for (const key of keys) {
    assertSame(
      (actual as Record<PropertyKey, unknown>)[key],
      (expected as Record<PropertyKey, unknown>)[key],
      `${path}.${String(key)}`,
    );
  }
}

/** The shape and its zod twin agree on `value`. */
function assertAgree(shape: Shape<unknown>, value: unknown): void {
  const read = shape.read(value);
  const zod = z.safeParse(zodSchema(shape), value);
  if (read === REJECTED) {
    assert.equal(zod.success, false, "the shape rejects what zod accepts");
  } else {
    assert.ok(zod.success, "the shape accepts what zod rejects");
    assertSame(read, zod.data);
  }
}

/** Values nothing expects: odd primitives, exotic objects, objects without a prototype. */
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(undefined, null, NaN, Infinity, -Infinity, -0, 0, "", [], {}, true),
  fc.anything({
    maxDepth: 2,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withSparseArray: true,
    withTypedArray: true,
    withObjectString: true,
  }),
);

/** Keys that are also on `Object.prototype`, or look like array indices, or are plain. */
const fieldName = fc.constantFrom("a", "b", "session_id", "0", "constructor", "toString");

const ABSENT = Symbol("absent");

/**
 * Values made to nearly fit `shape` (some do, some miss by one field or one type), mixed with odd
 * ones at every level.
 */
function valueFor(shape: Shape<unknown>, depth = 0): fc.Arbitrary<unknown> {
  const def = shape.def;
  let fitting: fc.Arbitrary<unknown>;
  switch (def.type) {
    case "string":
      fitting = fc.string({ maxLength: 5 });
      break;
    case "number":
      fitting = fc.oneof(fc.integer(), fc.double());
      break;
    case "boolean":
      fitting = fc.boolean();
      break;
    case "unknown":
      fitting = oddValue;
      break;
    case "literal":
      fitting = fc.constantFrom(def.value, def.value + "x", def.value.toUpperCase());
      break;
    case "optional":
      fitting = fc.oneof(fc.constant(undefined), valueFor(def.inner, depth + 1));
      break;
    case "nullable":
      fitting = fc.oneof(fc.constant(null), valueFor(def.inner, depth + 1));
      break;
    case "union":
      fitting = fc.oneof(...def.options.map((option) => valueFor(option, depth + 1)));
      break;
    case "array":
      fitting = fc.array(valueFor(def.element, depth + 1), { maxLength: 3 });
      break;
    case "looseObject": {
      const fields = Object.entries(def.fields);
      fitting = fc.record({
        known: fc.tuple(...fields.map(([, field]) =>
          fc.oneof(
            { weight: 1, arbitrary: fc.constant(ABSENT) },
            { weight: 1, arbitrary: fc.constant(undefined) },
            { weight: 6, arbitrary: valueFor(field, depth + 1) },
          )
        )),
        extra: fc.dictionary(fc.oneof(fieldName, fc.string({ maxLength: 3 })), oddValue, {
          maxKeys: 3,
        }),
        extraFirst: fc.boolean(),
        base: fc.constantFrom("plain", "bare", "inheriting"),
        ownProto: fc.option(oddValue),
      }).map(({ known, extra, extraFirst, base, ownProto }) => {
        const object: Record<string, unknown> = base === "plain"
          ? {}
          : Object.create(base === "bare" ? null : { a: "inherited", inherited: 1 });
        const put = (key: string, value: unknown) =>
          Object.defineProperty(object, key, {
            value,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        const putExtra = () => Object.entries(extra).forEach(([k, v]) => put(k, v));
        if (extraFirst) putExtra();
        fields.forEach(([key], i) => known[i] !== ABSENT && put(key, known[i]));
        if (!extraFirst) putExtra();
        if (ownProto !== null) put("__proto__", ownProto);
        return object;
      });
      break;
    }
  }
  return fc.oneof({ weight: depth > 2 ? 1 : 5, arbitrary: fitting }, {
    weight: 1,
    arbitrary: oddValue,
  });
}

const { shape: anyShape } = fc.letrec<{ shape: Shape<unknown> }>((tie) => ({
  shape: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom<Shape<unknown>>(string(), number(), boolean(), unknown()),
    fc.constantFrom("a", "", "PostToolUse").map((value) => literal(value)),
    tie("shape").map((inner) => optional(inner)),
    tie("shape").map((inner) => nullable(inner)),
    // zod passes "may be missing" up through these: a field of one of them may be absent.
    tie("shape").map((inner) => nullable(optional(inner))),
    tie("shape").map((inner) => union([number(), optional(inner)])),
    fc.array(tie("shape"), { minLength: 1, maxLength: 3 }).map((options) => union(options)),
    tie("shape").map((element) => array(element)),
    fc.dictionary(fieldName, tie("shape"), { maxKeys: 4 }).map((fields) => looseObject(fields)),
  ),
}));

Deno.test("property: every shape reads a value exactly as zod parses it with its twin", () => {
  fc.assert(
    fc.property(
      anyShape.chain((shape) => fc.tuple(fc.constant(shape), valueFor(shape))),
      ([shape, value]) => assertAgree(shape, value),
    ),
    { numRuns: RUNS },
  );
});

/** The shapes the hooks read on every call, with real values of each. */
async function hotPathShapes(): Promise<
  { name: string; shape: Shape<unknown>; real: unknown[] }[]
> {
  const inputs: unknown[] = [];
  for (const scenario of await hookScenarios()) {
    for (const capture of await hookCaptures(scenario)) inputs.push(capture.input);
  }
  const record = nextSessionRecord(undefined, {
    sessionId: "s1",
    root: "/p",
    event: "PostToolUse",
    cwd: "/p",
    transcriptPath: "/t.jsonl",
    env: { TMUX_PANE: "%3", TMUX: "/tmp/tmux-0/default,1,0" },
    hookParentPid: 41,
    agent: { pid: 42, command: "claude", startedMs: 1_700_000_000_000, startId: "b/1" },
  }, 1_700_000_100_000);
  return [
    ...Object.entries(HOOK_INPUT_SHAPES).map(([event, shape]) => ({
      name: `hook input: ${event}`,
      shape: shape as Shape<unknown>,
      real: inputs,
    })),
    { name: "hook input: other events", shape: OTHER_INPUT_SHAPE, real: inputs },
    {
      name: "session.json",
      shape: SESSION_RECORD_SHAPE,
      real: [record, { ...record, agent_started: "Mon Jan  1 00:00:00 2024", future: 1 }],
    },
    { name: "advice", shape: ADVICE_SHAPE, real: [{ ts: "t", source: "hook track", text: "x" }] },
    {
      name: "failure-tracker.json",
      shape: TRACKER_SHAPE,
      real: [emptyTracker(), {
        ...emptyTracker(),
        failures: [{ key: "k", at: 1, error: "overloaded" }],
        advised: ["k"],
      }],
    },
  ];
}

/** `value` with one thing changed: a key removed, retyped or set to undefined, or junk added. */
function mutated(value: unknown): fc.Arbitrary<unknown> {
  if (typeof value !== "object" || value === null) return fc.constant(value);
  const keys = Object.keys(value);
  const change = fc.record({
    key: keys.length > 0 ? fc.constantFrom(...keys) : fc.constant("a"),
    how: fc.constantFrom("remove", "undefined", "retype", "add", "deep"),
    to: oddValue,
  });
  return change.chain(({ key, how, to }) => {
    const copy = { ...value } as Record<string, unknown>;
    switch (how) {
      case "remove":
        delete copy[key];
        return fc.constant(copy);
      case "undefined":
        copy[key] = undefined;
        return fc.constant(copy);
      case "retype":
        copy[key] = to;
        return fc.constant(copy);
      case "add":
        return fc.constant({ ...copy, [`x${keys.length}`]: to });
      case "deep":
        return mutated(copy[key]).map((inner) => ({ ...copy, [key]: inner }));
    }
  });
}

Deno.test("the hot-path shapes agree with zod on every real payload and on mutations of them", async (t) => {
  for (const { name, shape, real } of await hotPathShapes()) {
    await t.step(name, () => {
      for (const value of real) assertAgree(shape, value);
      fc.assert(
        fc.property(
          fc.oneof(
            fc.constantFrom(...real).chain(mutated),
            fc.constantFrom(...real).chain(mutated).chain(mutated),
            valueFor(shape),
          ),
          (value) => assertAgree(shape, value),
        ),
        { numRuns: Math.ceil(RUNS / 3) },
      );
    });
  }
});

Deno.test("every real hook payload passes its event's shape without loading zod", async () => {
  const shapes: Record<string, Shape<unknown>> = HOOK_INPUT_SHAPES;
  for (const scenario of await hookScenarios()) {
    for (const capture of await hookCaptures(scenario)) {
      const shape = shapes[capture.input.hook_event_name] ?? OTHER_INPUT_SHAPE;
      assert.notEqual(shape.read(capture.input), REJECTED, `${scenario} ${capture.event}`);
    }
  }
});

Deno.test("a rejection is explained by zod's issues; parseShape throws zod's error", async () => {
  const shape = looseObject({ session_id: string(), n: optional(number()) });
  assert.deepEqual(await safeParseShape(shape, { session_id: "s", n: 1, x: [] }), {
    success: true,
    data: { session_id: "s", n: 1, x: [] },
  });
  const rejected = await safeParseShape(shape, { n: "1" });
  assert.ok(!rejected.success);
  assert.deepEqual(rejected.error.issues.map((issue) => [issue.path, issue.code]), [
    [["session_id"], "invalid_type"],
    [["n"], "invalid_type"],
  ]);
  await assert.rejects(() => parseShape(shape, []), (error: unknown) => {
    assert.deepEqual((error as { issues: { code: string }[] }).issues.map((i) => i.code), [
      "invalid_type",
    ]);
    return true;
  });
});
