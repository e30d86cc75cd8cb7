// A launcher that stays as its command's parent and passes its command line on, as the npm `deno`
// shim (`node bin.cjs run … hook heartbeat`) does: runs its arguments as a command, waits for it,
// and exits with its code.
//
// Usage: deno run -A launcher.ts <program> [args…]
const [program, ...args] = Deno.args as [string, ...string[]];
const { code } = await new Deno.Command(program, { args, stdin: "inherit" }).spawn().status;
Deno.exit(code);
