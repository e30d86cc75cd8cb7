/**
 * Deferred work: values built on first use, and modules imported on first use. A hook pays on
 * every tool call for what its modules build and load up front.
 *
 * @module
 */

/** Returns a function that calls `make` once, on first use, and then returns its result. */
export function lazy<T>(make: () => T): () => T {
  let made = false;
  let value: T;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}

/**
 * `import()` of a module a hot path needs only sometimes, by a computed specifier (relative to
 * `base`: pass `import.meta.url`). `deno run` reads the whole graph of every `import("…")` whose
 * specifier is written out as soon as the module holding it loads, whether it runs or not (~0.2
 * ms a module, more for zod); one computed is read only when it runs. `deno compile` cannot see it
 * either: `commands/lazy_modules.ts` names every module imported so, for `--include commands`
 * (the command modules are in that folder).
 */
export function importLater<M>(specifier: string, base: string): Promise<M> {
  return import(new URL(specifier, base).href);
}
