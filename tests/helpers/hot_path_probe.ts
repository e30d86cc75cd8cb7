/**
 * A `deno run --preload` script that watches a lifeline process for work its hot path must not
 * do, and writes what it saw to `$LIFELINE_PROBE_OUT` as the process exits: how many
 * `Intl.DateTimeFormat`s were made (the first costs ~12 ms of ICU start-up) and whether the zod
 * bundle was evaluated (it marks `globalThis.__zod_globalConfig`).
 *
 * @module
 */

const out = Deno.env.get("LIFELINE_PROBE_OUT");
if (!out) throw new Error("LIFELINE_PROBE_OUT must name the file the probe writes");

let dateTimeFormats = 0;
const DateTimeFormat = Intl.DateTimeFormat;
const counted = function (...args: ConstructorParameters<typeof Intl.DateTimeFormat>) {
  dateTimeFormats++;
  return new DateTimeFormat(...args);
};
Object.defineProperty(Intl, "DateTimeFormat", { value: counted, configurable: true });

globalThis.addEventListener("unload", () => {
  Deno.writeTextFileSync(
    out,
    JSON.stringify({ dateTimeFormats, zod: "__zod_globalConfig" in globalThis }) + "\n",
  );
});
