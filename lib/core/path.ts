/**
 * Path strings, joined and split with "/", which every platform's file APIs accept. This module
 * avoids `node:path` on purpose: hooks load it on every tool call, and the first `node:` import
 * costs ~6 ms.
 *
 * @module
 */

/** Joins path segments with "/", dropping empty ones and doubled separators. */
export function joinPath(first: string, ...rest: string[]): string {
  let path = first;
  for (const part of rest) {
    if (part === "") continue;
    path = path.endsWith("/") || path.endsWith("\\") ? path + part : `${path}/${part}`;
  }
  return path;
}

/** True for `/x`, `C:\x`, `C:/x` and `\\server\x`. */
export function isAbsolutePath(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith("\\\\");
}

/**
 * `path` made absolute against `base`, without a trailing separator. Leading `./` segments are
 * dropped; `..` is left to the file APIs, which resolve it.
 */
export function absolutePath(path: string, base: string): string {
  const rest = path.replace(/^(?:\.[\\/])+/, "");
  const joined = isAbsolutePath(path)
    ? path
    : rest === "" || rest === "."
    ? base
    : joinPath(base, rest);
  return withoutTrailingSeparator(joined);
}

/** `path` without trailing separators, except where that is the whole path (`/`, `C:\`). */
export function withoutTrailingSeparator(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, "");
  return trimmed === "" || /^[A-Za-z]:$/.test(trimmed)
    ? path.slice(0, trimmed.length + 1)
    : trimmed;
}

/** The directory part of a path ("." when there is none). */
export function dirName(path: string): string {
  const cut = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  if (cut < 0) return ".";
  return cut === 0 ? path.slice(0, 1) : path.slice(0, cut);
}

/** The last segment of a path. */
export function baseName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1);
}

/**
 * `path` relative to `root`, with "/" separators, for messages and JSON. A trailing separator on
 * `root` does not change the result; a path outside `root` is returned whole.
 */
export function relativeTo(root: string, path: string): string {
  const base = root.replace(/[\\/]+$/, "");
  if (path === base) return ".";
  for (const separator of ["/", "\\"]) {
    if (path.startsWith(base + separator)) return path.slice(base.length + 1);
  }
  return path;
}
