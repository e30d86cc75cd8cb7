// The shape of the code, checked like Deno std's `_tools`: layers import only downwards, pure
// modules touch nothing outside their arguments, and only the edges touch the process.
import assert from "node:assert/strict";
import { REPO_DIR } from "./helpers/lifeline.ts";

/** Each folder's layer: a module may import its own folder, or a lower layer. */
const LAYERS: Record<string, number> = {
  "lib/core": 0,
  "lib/state": 1,
  "lib/host": 2,
  "lib/claude": 3,
  "lib/sessions": 4,
  "lib/advice": 5,
  "lib/watch": 5,
  "lib/harness": 5,
  /** Putting lifeline into a machine and taking it out: settings, services, excludes, doctor. */
  "lib/setup": 6,
  "commands": 7,
  ".": 8,
};

async function sources(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(`${REPO_DIR}/${dir}`)) {
    const path = dir === "." ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory && entry.name !== "vendor") found.push(...await sources(path));
    else if (entry.isFile && entry.name.endsWith(".ts")) found.push(path);
  }
  return found;
}

const files = [...await sources("lib"), ...await sources("commands"), "main.ts"];
const text = new Map(
  await Promise.all(
    files.map(async (f) => [f, await Deno.readTextFile(`${REPO_DIR}/${f}`)] as const),
  ),
);
const folder = (path: string) => path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : ".";
/** The code without comments, so that prose about `Deno.exit` is not code. */
const code = (path: string) => text.get(path)!.replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, "");

Deno.test("layers import only their own folder or a lower layer; commands do not import commands", () => {
  const wrong: string[] = [];
  for (const file of files) {
    const imports = /(?:from|import\(|importLater<[^>]*>\()\s*"(\.[^"]+)"/g;
    for (const [, spec] of text.get(file)!.matchAll(imports)) {
      const target = new URL(spec!, `file:///${file}`).pathname.slice(1);
      if (target.endsWith(".json")) continue;
      const [from, to] = [folder(file), folder(target)];
      const sibling = from === to;
      const allowed = sibling
        ? from !== "commands" || ["commands/mod.ts", "commands/dispatch.ts"].includes(file)
        : LAYERS[to]! < LAYERS[from]!;
      if (!allowed) wrong.push(`${file} imports ${target}`);
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("pure modules (every *_policy.ts, and any whose doc says Pure) touch nothing outside", () => {
  const pure = files.filter((f) =>
    f.endsWith("_policy.ts") || /^\s*\*.*\bPure\b/m.test(text.get(f)!)
  );
  assert.ok(pure.length >= 9, pure.join(", "));
  const wrong = pure.flatMap((f) =>
    [/\bDeno\./, /\bDate\.now\b/, /\bMath\.random\b/, /\bnew Date\(\s*\)/, /\bperformance\.now\b/]
      .filter((p) => p.test(code(f))).map((p) => `${f}: ${p.source}`)
  );
  assert.deepEqual(wrong, []);
  for (const f of files.filter((f) => f.endsWith("_policy.ts"))) {
    assert.match(text.get(f)!.split("*/")[0]!, /\bPure\b/i, `${f} says it is pure`);
  }
});

Deno.test("only main.ts touches the process: arguments, exit, environment, streams, clock of record", () => {
  const edge: [RegExp, string[]][] = [
    [/\bDeno\.(?:args|exit|env)\b/, ["main.ts"]],
    [/\bDeno\.(?:stdout|stderr|stdin)\b|\bconsole\./, ["main.ts", "lib/core/output.ts"]],
    [/\bMath\.random\b|\bDeno\.hostname\b|resolvedOptions\(\)\.timeZone/, ["main.ts"]],
  ];
  const wrong = edge.flatMap(([pattern, allowed]) =>
    files.filter((f) => !allowed.includes(f) && pattern.test(code(f))).map((f) =>
      `${f}: ${pattern.source}`
    )
  );
  assert.deepEqual(wrong, []);
});
