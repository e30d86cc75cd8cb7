// The floor for hook latency: the least a Deno hook can do, reading stdin and writing one file,
// with the cheapest primitives (plain reads; web streams would add ~5 ms of start-up).
const chunks: Uint8Array[] = [];
const buffer = new Uint8Array(1 << 16);
for (let n; (n = await Deno.stdin.read(buffer)) !== null;) chunks.push(buffer.slice(0, n));
const input = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
chunks.reduce((offset, chunk) => (input.set(chunk, offset), offset + chunk.length), 0);
await Deno.writeFile(Deno.args[0]!, input);
