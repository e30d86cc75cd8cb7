/**
 * The tool fallback map, `.working-state/fallback-tools.md` (spec/error-recovery.md §5.5): which
 * tool to use when another keeps failing, and what the fallback cannot do. It is markdown so the
 * agent and the user can read and edit it; lifeline reads two forms, a table and a list:
 *
 * ```markdown
 * | tool | fallback | what the fallback cannot do |
 * | --- | --- | --- |
 * | mcp__firecrawl__scrape | WebFetch | no JavaScript rendering: static pages only |
 * | mcp__github__* | Bash: gh | needs the gh CLI, logged in |
 *
 * - mcp__puppeteer__screenshot -> Bash: chromium --headless --screenshot (no interaction)
 * ```
 *
 * A `*` in a tool name matches any run of characters. The first exact match wins, then the first
 * pattern. Lines that fit neither form are ignored, and a missing file is an empty map. The file
 * is the agent's to edit, so it is read bounded and parsed without backtracking patterns.
 *
 * @module
 */

import { projectPaths } from "../state/layout.ts";
import { readTextHead, RefusedPathError } from "../state/store.ts";

/** One mapping. */
export interface FallbackEntry {
  tool: string;
  fallback: string;
  /** What the fallback cannot do that the tool could ("" when not said). */
  limits: string;
}

const SEPARATOR_ROW = /^\|?\s*:?-{2,}/;

/** Parses the map's markdown. Never throws. */
export function parseFallbackMap(markdown: string): FallbackEntry[] {
  const entries: FallbackEntry[] = [];
  for (const raw of markdown.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("|")) {
      if (SEPARATOR_ROW.test(line)) continue;
      const cells = line.replace(/^\||\|$/g, "").split("|").map((c) => stripCode(c.trim()));
      const [tool, fallback, limits = ""] = cells;
      if (!tool || !fallback || /^tool$/i.test(tool)) continue;
      entries.push({ tool, fallback, limits });
      continue;
    }
    const item = /^[-*]\s+`?([^\s`]+)`?\s*(?:->|→|=>)\s*(\S.*)$/.exec(line);
    if (item) entries.push({ tool: item[1]!, ...splitLimits(item[2]!) });
  }
  return entries;
}

/** `fallback (what it cannot do)`: the text up to the first `(`, and what the parentheses hold. */
function splitLimits(rest: string): { fallback: string; limits: string } {
  const text = rest.trimEnd();
  const open = text.indexOf("(");
  if (!text.endsWith(")") || open < 0) {
    return { fallback: stripCode(text), limits: "" };
  }
  return {
    fallback: stripCode(text.slice(0, open).trim()),
    limits: text.slice(open + 1, -1).trim(),
  };
}

function stripCode(text: string): string {
  return text.replace(/^`(.*)`$/, "$1");
}

/**
 * Whether `glob` (where `*` is any run of characters) matches all of `text`. A loop rather than a
 * regex: `a*a*a*…b` as a regex backtracks exponentially, this is at most glob × text steps.
 */
export function globMatches(glob: string, text: string): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (glob[g] === "*") {
      star = g++;
      resume = t;
    } else if (glob[g] === text[t]) {
      g++;
      t++;
    } else if (star >= 0) {
      g = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (glob[g] === "*") g++;
  return g === glob.length;
}

/** The entry for `tool`: an exact match first, then the first matching pattern. */
export function findFallback(
  entries: readonly FallbackEntry[],
  tool: string,
): FallbackEntry | undefined {
  return entries.find((e) => e.tool === tool) ??
    entries.find((e) => e.tool.includes("*") && globMatches(e.tool, tool));
}

/** Fallbacks for Claude Code's own tools, used when the project's map has no entry. */
export const BUILTIN_FALLBACKS: readonly FallbackEntry[] = [
  {
    tool: "Edit",
    fallback: "a small script (written with Write, run with Bash) that does the string replacement",
    limits: "no edit preview; Read the file afterwards to check the change",
  },
  {
    tool: "MultiEdit",
    fallback: "a small script (written with Write, run with Bash) that does the replacements",
    limits: "no edit preview; Read the file afterwards to check the change",
  },
  {
    tool: "Write",
    fallback: "Bash with a quoted heredoc (cat > file <<'EOF')",
    limits: "mind the quoting; very long content is better split",
  },
  {
    tool: "Bash",
    fallback: "a script file (written with Write) run with one short Bash command",
    limits: "",
  },
  {
    tool: "WebFetch",
    fallback: "Bash: curl -sL <url>",
    limits: "raw HTML, no summarising, no JavaScript rendering",
  },
];

/** How much of the map is read: far more than any hand-written table. */
const MAP_BYTES = 256 << 10;

/**
 * Reads the project's map; a missing or unreadable file is an empty map. One that is a link or
 * not a regular file is refused ({@linkcode RefusedPathError}): its text would reach the model.
 */
export async function readFallbackMap(root: string): Promise<FallbackEntry[]> {
  try {
    const head = await readTextHead(projectPaths(root).fallbackTools, {
      root,
      maxBytes: MAP_BYTES,
    });
    return parseFallbackMap(head.text);
  } catch (error) {
    if (error instanceof RefusedPathError) throw error;
    return [];
  }
}
