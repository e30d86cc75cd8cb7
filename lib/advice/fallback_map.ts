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
 * pattern. Lines that fit neither form are ignored, and a missing file is an empty map.
 *
 * @module
 */

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
    const item = /^[-*]\s+`?([^\s`]+)`?\s*(?:->|→|=>)\s*(.+)$/.exec(line);
    if (item) {
      const [, tool, rest] = item;
      const withLimits = /^(.*?)\s*\((.*)\)\s*$/.exec(rest!);
      entries.push({
        tool: tool!,
        fallback: stripCode((withLimits ? withLimits[1]! : rest!).trim()),
        limits: withLimits ? withLimits[2]!.trim() : "",
      });
    }
  }
  return entries;
}

function stripCode(text: string): string {
  return text.replace(/^`(.*)`$/, "$1");
}

function globToRegExp(glob: string): RegExp {
  const escaped = glob.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${escaped}$`);
}

/** The entry for `tool`: an exact match first, then the first matching pattern. */
export function findFallback(
  entries: readonly FallbackEntry[],
  tool: string,
): FallbackEntry | undefined {
  return entries.find((e) => e.tool === tool) ??
    entries.find((e) => e.tool.includes("*") && globToRegExp(e.tool).test(tool));
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

/** Reads the project's map; missing or unreadable files give an empty map. */
export async function readFallbackMap(path: string): Promise<FallbackEntry[]> {
  try {
    return parseFallbackMap(await Deno.readTextFile(path));
  } catch {
    return [];
  }
}
