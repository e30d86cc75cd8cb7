// The client's own types, without installing the client. `@anthropic-ai/claude-agent-sdk` lists
// its native binaries (733 MB on linux-x64: glibc and musl) as optionalDependencies, and `deno task`
// downloads every package in deno.lock before any task runs, the demo's included. So the SDK is
// in neither deno.json nor deno.lock: this test fetches its published tarball (checked against
// the registry's integrity), keeps only its `.d.ts` files in the Deno cache, and runs the
// type-level tests in tests/sdk_types/ against them with an import map of their own, whose npm
// packages are pinned by tests/sdk_types/deno.lock.
import assert from "node:assert/strict";
import { fileURLToPath, pathToFileURL } from "node:url";
import manifest from "../deno.json" with { type: "json" };
import { denoCacheDir } from "./helpers/lifeline.ts";

const SDK = "@anthropic-ai/claude-agent-sdk";
const SDK_VERSION = "0.3.328";
/** `dist.integrity` of the version above, as the registry publishes it. */
const SDK_INTEGRITY =
  "sha512-YcOWlpXVm7etPjPVrvSJEfynDksMiG11zvEybSBnk1EVWji6rSjU75HbbhJ8XPEB2ECEwRRP597Udu6IWMtsDw==";
/** What the SDK's `sdk.d.ts` imports, resolved the way npm resolves its peer dependencies. */
const SDK_IMPORTS = {
  "@anthropic-ai/sdk/": "npm:/@anthropic-ai/sdk@1.14.0/",
  "@modelcontextprotocol/sdk/": "npm:/@modelcontextprotocol/sdk@1.32.2/",
  "zod/": "npm:/zod@4.6.7/",
  "child_process": "node:child_process",
  "crypto": "node:crypto",
  "stream": "node:stream",
};
const REPO = new URL("../", import.meta.url);

Deno.test("deno.lock holds no native binaries (deno task downloads all of it, demo included)", async () => {
  const lock = JSON.parse(await Deno.readTextFile(new URL("deno.lock", REPO)));
  const native = Object.entries(lock.npm as Record<string, { os?: string[] }>)
    .filter(([, entry]) => entry.os !== undefined).map(([name]) => name);
  assert.deepEqual(native, []);
  assert.ok(!Object.keys(lock.npm).some((name) => name.startsWith(`${SDK}@`)), "the SDK is locked");
});

Deno.test("the type-level tests pass against the SDK's published types", async () => {
  const sdkDir = await sdkTypes();
  const config = await Deno.makeTempFile({ prefix: "lifeline-sdk-types-", suffix: ".json" });
  try {
    await Deno.writeTextFile(config, JSON.stringify(typeTestConfig(sdkDir)));
    const lockFile = fileURLToPath(new URL("tests/sdk_types/deno.lock", REPO));
    const frozen = await exists(lockFile);
    const result = await new Deno.Command(Deno.execPath(), {
      args: [
        "test",
        "--config",
        config,
        `--lock=${lockFile}`,
        `--frozen=${frozen}`,
        "tests/sdk_types",
      ],
      cwd: REPO,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const output = new TextDecoder().decode(result.stdout) +
      new TextDecoder().decode(result.stderr);
    assert.equal(result.code, 0, output);
    const passed = /^ok \| (\d+) passed/m.exec(output);
    assert.ok(passed && Number(passed[1]) > 0, output);
  } finally {
    await Deno.remove(config);
  }
});

/** The project's compiler options and import map, plus the SDK's types and their imports. */
function typeTestConfig(sdkDir: string): Record<string, unknown> {
  const sdk = pathToFileURL(`${sdkDir}/`).href;
  const imports: Record<string, string> = { [SDK]: `${sdk}sdk.d.ts` };
  for (const [name, target] of Object.entries(manifest.imports)) {
    imports[name] = new URL(target, REPO).href;
  }
  return {
    compilerOptions: manifest.compilerOptions,
    imports,
    scopes: { [sdk]: SDK_IMPORTS },
  };
}

/**
 * The directory holding the SDK's `.d.ts` files, from the Deno cache; on the first run, fetched
 * from the registry (a 1.6 MB tarball), checked against {@linkcode SDK_INTEGRITY} and unpacked there.
 */
async function sdkTypes(): Promise<string> {
  const root = `${denoCacheDir()}/lifeline-tests`;
  const dir = `${root}/claude-agent-sdk@${SDK_VERSION}`;
  if (await exists(`${dir}/sdk.d.ts`)) return dir;
  const registry = (Deno.env.get("NPM_CONFIG_REGISTRY") ?? "https://registry.npmjs.org/")
    .replace(/\/?$/, "/");
  const url = `${registry}${SDK}/-/claude-agent-sdk-${SDK_VERSION}.tgz`;
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}; is the registry reachable?`);
  const tarball = new Uint8Array(await response.arrayBuffer());
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-512", tarball));
  const integrity = `sha512-${btoa(String.fromCharCode(...digest))}`;
  if (integrity !== SDK_INTEGRITY) {
    throw new Error(`${url} has integrity ${integrity}, not the published ${SDK_INTEGRITY}`);
  }
  const tar = new Uint8Array(
    await new Response(new Blob([tarball]).stream().pipeThrough(new DecompressionStream("gzip")))
      .arrayBuffer(),
  );
  // Unpacked beside the final place and renamed into it, so a half-written copy is never used.
  await Deno.mkdir(root, { recursive: true });
  const temp = await Deno.makeTempDir({ dir: root, prefix: ".unpacking-" });
  for (const [path, body] of tarFiles(tar)) {
    const name = /^package\/([\w.-]+\.d\.ts)$/.exec(path)?.[1];
    if (name) await Deno.writeFile(`${temp}/${name}`, body);
  }
  try {
    await Deno.rename(temp, dir);
  } catch (error) {
    await Deno.remove(temp, { recursive: true });
    // Another run got there first; its copy is as good.
    if (!await exists(`${dir}/sdk.d.ts`)) throw error;
  }
  return dir;
}

function exists(path: string): Promise<boolean> {
  return Deno.stat(path).then(() => true, () => false);
}

/** The regular files of a tar archive (ustar, with pax `path` records), as path and bytes. */
function* tarFiles(tar: Uint8Array): Generator<[string, Uint8Array]> {
  const text = new TextDecoder();
  let paxPath: string | undefined;
  for (let at = 0; at + 512 <= tar.length;) {
    const header = tar.subarray(at, at + 512);
    if (header.every((byte) => byte === 0)) return;
    const field = (start: number, length: number) =>
      text.decode(header.subarray(start, start + length)).split("\0")[0]!;
    const size = parseInt(field(124, 12).trim(), 8);
    const type = field(156, 1);
    const body = tar.subarray(at + 512, at + 512 + size);
    const prefix = field(345, 155);
    const path = paxPath ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    paxPath = undefined;
    if (type === "x") paxPath = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(text.decode(body))?.[1];
    else if (type === "0" || type === "") yield [path, body];
    at += 512 + Math.ceil(size / 512) * 512;
  }
}
