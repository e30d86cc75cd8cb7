/**
 * Shapes: the JSON structures the hooks read on every call (hook input, `session.json`, the
 * outbox, the failure tracker), declared once with the names of the zod/mini functions they stand
 * for, and checked without zod.
 *
 * Why: a hook runs on every tool call, and zod costs it ~5 ms of a ~25 ms call (V8 compiles zod's
 * code afresh in every process: loading it, building a schema, the first parse). A shape decides
 * in microseconds, and gives what zod's parse would give: the same values accepted, the same
 * output. Only a rejected value loads zod, to run the shape's zod twin (see `shape_zod.ts`) and
 * explain the rejection with zod's issues, exactly as before. `tests/shape_test.ts` checks both
 * against each other on random and mutated values, and on every real payload of the fixtures.
 *
 * @module
 */

import type { IssueLike } from "./json_text.ts";
import { importLater } from "./lazy.ts";
import type * as ShapeZod from "./shape_zod.ts";

/** What {@linkcode Shape.read} returns for a value the shape does not accept. */
export const REJECTED: unique symbol = Symbol("rejected");

/** The zod/mini function a shape stands for, with its arguments. */
export type ShapeDef =
  | { type: "string" | "number" | "boolean" | "unknown" }
  | { type: "literal"; value: string }
  | { type: "optional" | "nullable"; inner: Shape<unknown> }
  | { type: "union"; options: readonly Shape<unknown>[] }
  | { type: "array"; element: Shape<unknown> }
  | { type: "looseObject"; fields: Readonly<Record<string, Shape<unknown>>> };

/**
 * A structure values are checked against. `Optional` is zod's `optin`: whether an object's key
 * with this shape may be missing.
 */
export interface Shape<T, Optional extends boolean = boolean> {
  readonly def: ShapeDef;
  readonly optional: Optional;
  /** The value as zod's parse of the zod twin returns it, or {@linkcode REJECTED}. */
  read(value: unknown): T | typeof REJECTED;
}

/** The type of the values a shape accepts (zod's `z.infer`). */
export type Infer<S> = S extends Shape<infer T> ? T : never;

function shape<T, Optional extends boolean>(
  def: ShapeDef,
  optional: Optional,
  read: (value: unknown) => T | typeof REJECTED,
): Shape<T, Optional> {
  return { def, optional, read };
}

/** `z.string()`. */
export function string(): Shape<string, false> {
  return shape({ type: "string" }, false, (v) => typeof v === "string" ? v : REJECTED);
}

/** `z.number()`: finite numbers (zod refuses NaN and the infinities). */
export function number(): Shape<number, false> {
  return shape({ type: "number" }, false, (v) => Number.isFinite(v) ? v as number : REJECTED);
}

/** `z.boolean()`. */
export function boolean(): Shape<boolean, false> {
  return shape({ type: "boolean" }, false, (v) => typeof v === "boolean" ? v : REJECTED);
}

/** `z.unknown()`: anything (and, as in zod, a key of this shape must be there). */
export function unknown(): Shape<unknown, false> {
  return shape({ type: "unknown" }, false, (v) => v);
}

/** `z.literal(value)`, for a string. */
export function literal<const L extends string>(value: L): Shape<L, false> {
  return shape({ type: "literal", value }, false, (v) => v === value ? value : REJECTED);
}

/** `z.optional(inner)`. */
export function optional<T>(inner: Shape<T>): Shape<T | undefined, true> {
  return shape(
    { type: "optional", inner },
    true,
    (v) => v === undefined ? undefined : inner.read(v),
  );
}

/** `z.nullable(inner)`. */
export function nullable<T, O extends boolean>(inner: Shape<T, O>): Shape<T | null, O> {
  return shape(
    { type: "nullable", inner },
    inner.optional,
    (v) => v === null ? null : inner.read(v),
  );
}

/** `z.union(options)`: the first option that accepts the value. */
export function union<const S extends readonly Shape<unknown>[]>(
  options: S,
): Shape<Infer<S[number]>> {
  return shape({ type: "union", options }, options.some((o) => o.optional), (v) => {
    for (const option of options) {
      const read = option.read(v);
      if (read !== REJECTED) return read as Infer<S[number]>;
    }
    return REJECTED;
  });
}

/** `z.array(element)`. */
export function array<T>(element: Shape<T>): Shape<T[], false> {
  return shape({ type: "array", element }, false, (v) => {
    if (!Array.isArray(v)) return REJECTED;
    const out = new Array<T>(v.length);
    for (let i = 0; i < v.length; i++) {
      const read = element.read(v[i]);
      if (read === REJECTED) return REJECTED;
      out[i] = read;
    }
    return out;
  });
}

type Fields = Record<string, Shape<unknown>>;

type Flatten<T> = { [K in keyof T]: T[K] } & unknown;

/** `z.looseObject(fields)`'s type: the fields (optional ones with `?`), and any other key. */
export type LooseObject<F extends Fields> = Flatten<
  & { [K in keyof F as F[K] extends Shape<unknown, true> ? never : K]: Infer<F[K]> }
  & { [K in keyof F as F[K] extends Shape<unknown, true> ? K : never]?: Infer<F[K]> }
  & { [key: string]: unknown }
>;

/**
 * `z.looseObject(fields)`: an object (not null, not an array) whose fields have their shapes;
 * other keys are kept. Read as zod reads it: a new object, with the fields first, in the order
 * given, then the other keys in theirs; a key that is there with `undefined` stays; `__proto__`
 * does not.
 */
export function looseObject<const F extends Fields>(fields: F): Shape<LooseObject<F>, false> {
  // zod ignores a field named `__proto__`, and so does the shape.
  const entries = Object.entries(fields).filter(([key]) => key !== "__proto__");
  const known = new Set(Object.keys(fields));
  return shape({ type: "looseObject", fields }, false, (v) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return REJECTED;
    const input = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, field] of entries) {
      if (!(key in input)) {
        if (field.optional) continue;
        return REJECTED;
      }
      const read = field.read(input[key]);
      if (read === REJECTED) return REJECTED;
      out[key] = read;
    }
    for (const key in input) {
      if (!known.has(key) && key !== "__proto__") out[key] = input[key];
    }
    return out as LooseObject<F>;
  });
}

/** What {@linkcode safeParseShape} returns: zod's `safeParse` result. */
export type ShapeResult<T> =
  | { success: true; data: T }
  | { success: false; error: Error & { issues: IssueLike[] } };

/**
 * Checks `value` against `shape`, as zod's `safeParse` of the shape's zod twin would. zod is loaded
 * only when the shape rejects the value, to say why (its issues); should zod accept it after all,
 * its answer stands.
 */
export async function safeParseShape<T>(shape: Shape<T>, value: unknown): Promise<ShapeResult<T>> {
  const read = shape.read(value);
  if (read !== REJECTED) return { success: true, data: read };
  const { zodSafeParse } = await importLater<typeof ShapeZod>("./shape_zod.ts", import.meta.url);
  return zodSafeParse(shape, value);
}

/** {@linkcode safeParseShape} that throws zod's error, as zod's `parse` does. */
export async function parseShape<T>(shape: Shape<T>, value: unknown): Promise<T> {
  const result = await safeParseShape(shape, value);
  if (!result.success) throw result.error;
  return result.data;
}
