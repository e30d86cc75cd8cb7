/**
 * A racer for check-then-use tests: swaps a path, as fast as it can until killed, between the real
 * thing and what must never be used in its place.
 *
 *   fifo <target> <text>      a regular file holding <text>, then a FIFO (each swap one rename)
 *   dir <target> <outside>    the real directory, then a symbolic link to <outside>
 *
 * It prints "ready" once the first swap is done.
 *
 * @module
 */

import { dirName } from "../../lib/core/path.ts";

const [mode, target, arg] = Deno.args as [string, string, string];
const say = (text: string) => Deno.stdout.writeSync(new TextEncoder().encode(text + "\n"));

function swapFifo(): never {
  const dir = dirName(target);
  const regular = `${dir}/.swap-regular`;
  const fifo = `${dir}/.swap-fifo`;
  Deno.writeTextFileSync(regular, arg);
  const made = new Deno.Command("mkfifo", { args: [fifo] }).outputSync();
  if (!made.success) throw new Error("mkfifo failed");
  for (let i = 0;; i++) {
    // A hard link renamed over the target: the target is always there, one or the other.
    Deno.linkSync(regular, `${regular}2`);
    Deno.renameSync(`${regular}2`, target);
    Deno.linkSync(fifo, `${fifo}2`);
    Deno.renameSync(`${fifo}2`, target);
    if (i === 0) say("ready");
  }
}

function swapDir(): never {
  const real = `${target}.real`;
  const link = `${target}.link`;
  Deno.renameSync(target, real);
  for (let i = 0;; i++) {
    try {
      Deno.renameSync(real, target); // the real directory
      Deno.symlinkSync(arg, link);
      Deno.renameSync(target, real);
      Deno.renameSync(link, target); // a link to outside
      Deno.removeSync(target);
    } catch {
      // The writer made the directory again while it was missing: take it away.
      try {
        if (Deno.lstatSync(link)) Deno.removeSync(link);
      } catch { /* not there */ }
      try {
        const info = Deno.lstatSync(target);
        Deno.removeSync(target, { recursive: info.isDirectory });
      } catch { /* not there */ }
    }
    if (i === 0) say("ready");
  }
}

if (mode === "fifo") swapFifo();
else if (mode === "dir") swapDir();
else throw new Error(`unknown mode ${mode}`);
