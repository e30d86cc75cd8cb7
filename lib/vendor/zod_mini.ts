// The zod/mini functions lifeline uses, re-exported from one pinned version.
//
// `deno task vendor` bundles this file into `zod_mini.js` (tree-shaken), and that bundle declares
// this file as its types (`@ts-self-types`). Why a bundle: loading zod from npm on every hook call
// costs ~18 ms (npm start-up plus evaluating all of zod, locales included), about as much as the
// rest of a hook; the tree-shaken bundle costs ~4 ms. Add a name here, then run `deno task vendor`.
export {
  array,
  boolean,
  enum,
  int,
  literal,
  looseObject,
  maximum,
  maxLength,
  minimum,
  minLength,
  nullable,
  number,
  object,
  optional,
  record,
  regex,
  safeParse,
  strictObject,
  string,
  union,
  unknown,
} from "npm:zod@4.6.7/mini";
export type { infer, input, output, ZodMiniType } from "npm:zod@4.6.7/mini";
