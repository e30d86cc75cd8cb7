/**
 * `deno task demo`: every lifeline capability end to end, in a temporary directory, narrated.
 * Each step checks what it shows; the demo fails loudly if lifeline misbehaves.
 *
 * @module
 */

import { childEnv } from "../tests/helpers/lifeline.ts";
import { demoDaemon } from "./daemon.ts";
import { demoFail } from "./fail.ts";
import { demoHooks } from "./hooks.ts";
import { say } from "./narrate.ts";
import { demoSetup } from "./setup.ts";
import { demoWatch } from "./watch.ts";

const started = performance.now();
const work = await Deno.makeTempDir({ prefix: "lifeline-demo-" });
try {
  const project = `${work}/project`;
  const home = `${work}/home`;
  await Deno.mkdir(project);
  await Deno.mkdir(home);
  const place = { project, home, env: childEnv({ HOME: home }) };
  say(`lifeline demo: a scratch project in ${project}, with its own HOME`);
  await demoHooks(place);
  await Deno.mkdir(`${work}/tmux`);
  await demoWatch(place, `${work}/tmux`);
  await Deno.mkdir(`${work}/daemon`);
  await demoDaemon(place, `${work}/daemon`);
  await Deno.mkdir(`${work}/fail`);
  const loopRepo = await demoFail(place, `${work}/fail`);
  await Deno.mkdir(`${work}/setup`);
  await demoSetup(place, `${work}/setup`, loopRepo);
  say("", `Demo finished in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
} finally {
  await Deno.remove(work, { recursive: true });
}
