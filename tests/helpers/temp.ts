/**
 * Temporary directories for tests, removed afterwards.
 *
 * @module
 */

/** Runs `fn` with a fresh temporary directory and removes it afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "lifeline-test-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** An isolated environment for a lifeline child: its own HOME, so nothing real is touched. */
export function isolatedEnv(
  home: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return { HOME: home, ...extra };
}

/** The names in a directory, sorted. */
export async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}
