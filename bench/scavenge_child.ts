// Child process for the scavenger benchmark: scavenges one transcript while sampling memory, and
// prints {"ms", "peakRss", "peakHeap", "baseRss", "rows"} as JSON.
import { scavengeFile } from "../lib/sessions/scavenger.ts";

const path = Deno.args[0]!;
const base = Deno.memoryUsage();
let peakRss = base.rss;
let peakHeap = base.heapUsed;
const sample = () => {
  const m = Deno.memoryUsage();
  peakRss = Math.max(peakRss, m.rss);
  peakHeap = Math.max(peakHeap, m.heapUsed);
};
const timer = setInterval(sample, 10);
const started = performance.now();
const summary = await scavengeFile(path);
const ms = performance.now() - started;
sample();
clearInterval(timer);
Deno.stdout.writeSync(new TextEncoder().encode(
  JSON.stringify({
    ms,
    peakRss,
    peakHeap,
    baseRss: base.rss,
    prompts: summary.prompts.length,
  }) + "\n",
));
