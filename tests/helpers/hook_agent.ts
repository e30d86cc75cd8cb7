// A stand-in for the agent: runs a hook command the way Claude Code does (`/bin/sh -c <command>`,
// the hook input on stdin), then stays alive like an agent waiting for its next tool call. Each
// SIGUSR1 runs the hook again. After every run it appends the hook's exit code to the done file.
//
// Usage: deno run -A hook_agent.ts <command> <input-file> <done-file>
const [command, inputFile, doneFile] = Deno.args as [string, string, string];
const input = await Deno.readFile(inputFile);

async function runHook(): Promise<void> {
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", command],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(input);
  await writer.close();
  const { code } = await child.status;
  await Deno.writeTextFile(doneFile, `${code}\n`, { append: true });
}

let running = runHook();
Deno.addSignalListener("SIGUSR1", () => {
  running = running.then(runHook);
});
// Alive until killed, like an agent between tool calls.
setInterval(() => {}, 1 << 30);
