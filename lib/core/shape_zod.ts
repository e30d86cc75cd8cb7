/**
 * The zod twin of a shape (see `shape.ts`): the zod/mini schema it stands for, built from it. Loaded
 * only when a shape rejects a value, so that the reason is zod's.
 *
 * @module
 */

import * as z from "zod";
import type { IssueLike } from "./json_text.ts";
import type { Shape, ShapeResult } from "./shape.ts";

const twins = new WeakMap<Shape<unknown>, z.ZodMiniType>();

/** The zod/mini schema `shape` stands for. */
export function zodSchema(shape: Shape<unknown>): z.ZodMiniType {
  let twin = twins.get(shape);
  if (twin) return twin;
  const def = shape.def;
  switch (def.type) {
    case "string":
      twin = z.string();
      break;
    case "number":
      twin = z.number();
      break;
    case "boolean":
      twin = z.boolean();
      break;
    case "unknown":
      twin = z.unknown();
      break;
    case "literal":
      twin = z.literal(def.value);
      break;
    case "optional":
      twin = z.optional(zodSchema(def.inner));
      break;
    case "nullable":
      twin = z.nullable(zodSchema(def.inner));
      break;
    case "union":
      twin = z.union(def.options.map(zodSchema));
      break;
    case "array":
      twin = z.array(zodSchema(def.element));
      break;
    case "looseObject":
      twin = z.looseObject(
        Object.fromEntries(
          Object.entries(def.fields).map(([key, field]) => [key, zodSchema(field)]),
        ),
      );
      break;
  }
  twins.set(shape, twin);
  return twin;
}

/** zod's `safeParse` of `value` against the zod twin of `shape`. */
export function zodSafeParse<T>(shape: Shape<T>, value: unknown): ShapeResult<T> {
  const result = z.safeParse(zodSchema(shape), value);
  return result.success
    ? { success: true, data: result.data as T }
    : { success: false, error: result.error as Error & { issues: IssueLike[] } };
}
