/**
 * Deferred construction. Building a zod schema costs ~0.05 ms per object, and a hook pays for
 * every schema its modules build at import time on every tool call; schemas are therefore built
 * the first time they are used.
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
