/**
 * Stand-ins for `systemctl --user` and `launchctl`, as real programs on a test's PATH: each call
 * is recorded (the exact command line), and what they are told (enable, start, bootstrap, …) is
 * kept as files, so that their answers to `is-enabled`, `is-active` and `print` follow, as the
 * real ones' do.
 *
 * @module
 */

/** A fake service manager: the directory to put first on PATH, and the calls it received. */
export interface FakeManager {
  bin: string;
  /** Every command line it ran, in order, without the program's directory. */
  calls(): Promise<string[]>;
  /** Forgets the calls so far. */
  clear(): Promise<void>;
}

const SYSTEMCTL = `#!/bin/sh
# systemctl --user, as far as lifeline uses it.
echo "systemctl $*" >> "$STATE/calls.log"
[ "$1" = "--user" ] || { echo "only --user" >&2; exit 1; }
shift
case "$1" in
  is-system-running) echo "$ANSWER"; [ "$ANSWER" = running ] ;;
  is-enabled) if [ -e "$STATE/enabled-$2" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) if [ -e "$STATE/active-$2" ]; then echo active; else echo inactive; exit 3; fi ;;
  enable)
    [ -e "$UNITS/$2" ] || { echo "Failed to enable unit: Unit file $2 does not exist." >&2; exit 1; }
    touch "$STATE/enabled-$2" ;;
  start|restart) touch "$STATE/active-$2" ;;
  disable) rm -f "$STATE/enabled-$3" "$STATE/active-$3" ;;
  daemon-reload) ;;
  *) echo "Unknown command verb $1." >&2; exit 1 ;;
esac
`;

const LAUNCHCTL = `#!/bin/sh
# launchctl, as far as lifeline uses it (macOS 10.11+ subcommands).
echo "launchctl $*" >> "$STATE/calls.log"
label() { echo "$1" | sed 's|.*/||'; }
case "$1" in
  version) echo "Darwin Bootstrapper Version 7.0.0" ;;
  print) [ -e "$STATE/loaded-$(label "$2")" ] || { echo "Could not find service" >&2; exit 113; } ;;
  enable) ;;
  bootstrap)
    name=$(basename "$3" .plist)
    [ -e "$3" ] || { echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; }
    [ -e "$STATE/loaded-$name" ] && { echo "Bootstrap failed: 37: already loaded" >&2; exit 37; }
    touch "$STATE/loaded-$name" ;;
  bootout) rm "$STATE/loaded-$(label "$2")" 2>/dev/null || { echo "No such process" >&2; exit 3; } ;;
  *) echo "Unrecognized subcommand: $1" >&2; exit 1 ;;
esac
`;

const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

async function install(
  dir: string,
  name: string,
  script: string,
  vars: Record<string, string>,
): Promise<FakeManager> {
  const bin = `${dir}/fake-${name}`;
  const state = `${bin}/state`;
  await Deno.mkdir(state, { recursive: true });
  const header = Object.entries({ STATE: state, ...vars })
    .map(([k, v]) => `${k}=${quote(v)}`).join("\n");
  await Deno.writeTextFile(`${bin}/${name}`, script.replace("\n", `\n${header}\n`));
  await Deno.chmod(`${bin}/${name}`, 0o755);
  const log = `${state}/calls.log`;
  return {
    bin,
    calls: async () => (await Deno.readTextFile(log).catch(() => "")).split("\n").filter(Boolean),
    clear: () => Deno.writeTextFile(log, ""),
  };
}

/** A `systemctl` whose user instance is `answer` (`running`, or `offline` as in a container). */
export function fakeSystemctl(
  dir: string,
  { unitDir, answer = "running" }: { unitDir: string; answer?: string },
): Promise<FakeManager> {
  return install(dir, "systemctl", SYSTEMCTL, { UNITS: unitDir, ANSWER: answer });
}

/** A `launchctl`. */
export function fakeLaunchctl(dir: string): Promise<FakeManager> {
  return install(dir, "launchctl", LAUNCHCTL, {});
}

/** A `loginctl` that says whether the user's services linger after logout. */
export async function fakeLoginctl(bin: string, linger: "yes" | "no"): Promise<void> {
  await Deno.writeTextFile(`${bin}/loginctl`, `#!/bin/sh\necho ${linger}\n`);
  await Deno.chmod(`${bin}/loginctl`, 0o755);
}
