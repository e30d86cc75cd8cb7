/**
 * Small text helpers shared by every capability.
 *
 * @module
 */

/** A short stable hash (32-bit FNV-1a, hex) of `text`: to notice a change, or to name a file. */
export function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, "0");
}

/** The SHA-256 of `text` (UTF-8), in hex. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A compact UTC time for file and ref names: `20261130T185600Z`. */
export function compactStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/** Eight random hex digits, for names that must not collide (temp files, batches). */
export function uniqueSuffix(): string {
  return crypto.randomUUID().slice(0, 8);
}

/** A random number in [0, 1) for a lock waiter's pause: waiters spread out, not in step. */
export function jitterFraction(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]! / 2 ** 32;
}

/** A word for a POSIX shell: as it is when it needs no quoting, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
