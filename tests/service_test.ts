// `lifeline service install | uninstall | status`: the exact unit files, and the exact
// `systemctl --user` and `launchctl` command lines, run against stand-ins on PATH that keep
// state as the real ones do; the tmux fallback run for real on a private server; and the real
// `systemctl --user`, where this machine has a user instance.
import assert from "node:assert/strict";
import {
  fakeLaunchctl,
  fakeLoginctl,
  type FakeManager,
  fakeSystemctl,
} from "./helpers/fake_service_manager.ts";
import { runInProcess } from "./helpers/in_process.ts";
import { onPath } from "../lib/host/self.ts";
import { REPO_DIR } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";
import {
  installServices,
  openServices,
  programRunner,
  uninstallServices,
} from "../lib/setup/service.ts";

const IGNORE = Deno.build.os === "windows";

/** A `lifeline` in `<dir>/bin` that writes how it was called to `$LIFELINE_STATE_DIR`, and waits. */
async function fakeLifeline(bin: string): Promise<string> {
  await Deno.mkdir(bin, { recursive: true });
  await Deno.writeTextFile(
    `${bin}/lifeline`,
    '#!/bin/sh\necho "$@" > "$LIFELINE_STATE_DIR/ran-$1"\nexec sleep 300\n',
  );
  await Deno.chmod(`${bin}/lifeline`, 0o755);
  return `${bin}/lifeline`;
}

interface Place {
  dir: string;
  env: Record<string, string>;
  manager: FakeManager;
  unitDir: string;
}

/** A HOME, a lifeline on PATH in `<dir>/bin`, and a fake systemctl (and loginctl) before it. */
async function systemdPlace(dir: string, answer = "running"): Promise<Place> {
  const unitDir = `${dir}/home/.config/systemd/user`;
  const manager = await fakeSystemctl(dir, { unitDir, answer });
  await fakeLoginctl(manager.bin, "no");
  await fakeLifeline(`${dir}/bin`);
  const env = { HOME: `${dir}/home`, USER: "me", PATH: `${manager.bin}:${dir}/bin:/usr/bin:/bin` };
  return { dir, env, manager, unitDir };
}

function service(place: Place, ...args: string[]) {
  return runInProcess(["service", ...args], { cwd: place.dir, env: place.env });
}

/** The unit install writes for `key`, as the test expects it, word for word. */
function expectedUnit(place: Place, key: "watch" | "daemon", binary = `${place.dir}/bin/lifeline`) {
  const [args, description] = key === "watch"
    ? ["watch tmux", "lifeline watch tmux: resume agents in tmux after their rate limit resets"]
    : ["daemon stale", "lifeline daemon stale: rescue sessions that died silently"];
  return `# Written by \`lifeline service install\`; \`lifeline service uninstall\` removes it.
[Unit]
Description=${description}

[Service]
ExecStart=${binary} ${args}
WorkingDirectory=${place.dir}/home
Environment=PATH=${place.env.PATH}
Restart=on-failure
RestartSec=10
StandardError=append:${place.dir}/home/.local/state/lifeline/logs/${key}.service.log

[Install]
WantedBy=default.target
`;
}

Deno.test({
  name: "service install writes two systemd user units, reloads, enables and starts them",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const place = await systemdPlace(dir);
      const result = await service(place, "install");
      assert.equal(result.code, 0, result.stderr);
      for (const key of ["watch", "daemon"] as const) {
        const path = `${place.unitDir}/lifeline-${key}.service`;
        assert.equal(await Deno.readTextFile(path), expectedUnit(place, key));
        assert.equal((await Deno.stat(path)).mode! & 0o777, 0o644);
      }
      assert.ok((await Deno.stat(`${dir}/home/.local/state/lifeline/logs`)).isDirectory);
      assert.deepEqual(await place.manager.calls(), [
        "systemctl --user is-system-running",
        "systemctl --user is-enabled lifeline-watch.service",
        "systemctl --user is-active lifeline-watch.service",
        "systemctl --user is-enabled lifeline-daemon.service",
        "systemctl --user is-active lifeline-daemon.service",
        "systemctl --user daemon-reload",
        "systemctl --user enable lifeline-watch.service",
        "systemctl --user start lifeline-watch.service",
        "systemctl --user enable lifeline-daemon.service",
        "systemctl --user start lifeline-daemon.service",
      ]);
      assert.match(result.stdout, /^lifeline-watch\.service +created: .*lifeline-watch\.service$/m);
      assert.match(result.stdout, /follow them with `lifeline logs`/);
      assert.match(result.stdout, /`loginctl enable-linger me` keeps them running/);
    });
  },
});

Deno.test({
  name: "a second install changes nothing and says so; a moved binary updates and restarts",
  ignore: IGNORE,
  async fn(t) {
    await withTempDir(async (dir) => {
      const place = await systemdPlace(dir);
      assert.equal((await service(place, "install")).code, 0);
      const watchUnit = `${place.unitDir}/lifeline-watch.service`;
      await t.step("again: nothing changes", async () => {
        const before = await Deno.stat(watchUnit);
        await place.manager.clear();
        const again = await service(place, "install", "--json");
        const out = JSON.parse(again.stdout);
        assert.deepEqual(out.units.map((u: { kind: string }) => u.kind), [
          "unchanged",
          "unchanged",
        ]);
        assert.ok((await place.manager.calls()).every((c) => / is-/.test(c)), "only questions");
        assert.equal((await Deno.stat(watchUnit)).mtime?.getTime(), before.mtime?.getTime());
        const text = await service(place, "install");
        assert.match(
          text.stdout,
          /^Nothing changed: both services are installed, enabled and running\.$/m,
        );
      });
      await t.step("a unit stopped by hand: only started again", async () => {
        await Deno.remove(`${place.manager.bin}/state/active-lifeline-daemon.service`);
        await place.manager.clear();
        const result = await service(place, "install");
        assert.match(result.stdout, /^lifeline-daemon\.service +started: /m);
        assert.match(result.stdout, /^lifeline-watch\.service +unchanged: /m);
        assert.deepEqual((await place.manager.calls()).filter((c) => !/ is-/.test(c)), [
          "systemctl --user start lifeline-daemon.service",
        ]);
      });
      await t.step("the binary moved: the units say where, and restart", async () => {
        const moved = await fakeLifeline(`${dir}/opt/bin`);
        const env = { ...place.env, PATH: `${place.manager.bin}:${dir}/opt/bin:/usr/bin:/bin` };
        const moved_ = { ...place, env };
        await place.manager.clear();
        const result = await service(moved_, "install");
        assert.equal(result.code, 0, result.stderr);
        assert.match(
          result.stdout,
          new RegExp(
            `^lifeline-watch\\.service +updated \\(was: ${dir}/bin/lifeline watch tmux\\)`,
            "m",
          ),
        );
        assert.equal(await Deno.readTextFile(watchUnit), expectedUnit(moved_, "watch", moved));
        assert.deepEqual((await place.manager.calls()).filter((c) => !/ is-/.test(c)), [
          "systemctl --user daemon-reload",
          "systemctl --user restart lifeline-watch.service",
          "systemctl --user restart lifeline-daemon.service",
        ]);
      });
    });
  },
});

Deno.test({
  name: "service status says what is installed; uninstall stops and removes both, once",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const place = await systemdPlace(dir);
      const before = JSON.parse((await service(place, "status", "--json")).stdout);
      assert.deepEqual(before.units.map((u: { installed: boolean }) => u.installed), [
        false,
        false,
      ]);
      await service(place, "install");
      const status = JSON.parse((await service(place, "status", "--json")).stdout);
      assert.equal(status.manager, "systemd");
      assert.deepEqual(status.units[0], {
        unit: "watch",
        name: "lifeline-watch.service",
        path: `${place.unitDir}/lifeline-watch.service`,
        installed: true,
        current: true,
        enabled: true,
        active: true,
        log: `${dir}/home/.local/state/lifeline/logs/watch.service.log`,
      });
      await place.manager.clear();
      const removed = await service(place, "uninstall");
      assert.equal(removed.code, 0, removed.stderr);
      assert.match(removed.stdout, /^lifeline-daemon\.service +stopped and removed: /m);
      assert.deepEqual((await place.manager.calls()).filter((c) => !/ is-/.test(c)), [
        "systemctl --user disable --now lifeline-watch.service",
        "systemctl --user disable --now lifeline-daemon.service",
        "systemctl --user daemon-reload",
      ]);
      assert.deepEqual(await Array.fromAsync(Deno.readDir(place.unitDir)), []);
      // A unit of that name the manager runs from elsewhere (no file here) is not lifeline's.
      await Deno.writeTextFile(`${place.manager.bin}/state/active-lifeline-watch.service`, "");
      await place.manager.clear();
      const again = await service(place, "uninstall");
      assert.match(again.stdout, /^lifeline-watch\.service +not installed: /m);
      assert.ok((await place.manager.calls()).every((c) => / is-/.test(c)), "only questions");
    });
  },
});

Deno.test({
  name: "XDG_CONFIG_HOME moves the units; from source they run the absolute deno and main.ts",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const unitDir = `${dir}/xdg/systemd/user`;
      const manager = await fakeSystemctl(dir, { unitDir });
      const env = {
        HOME: `${dir}/home`,
        XDG_CONFIG_HOME: `${dir}/xdg`,
        PATH: `${manager.bin}:/usr/bin:/bin`,
      };
      const result = await runInProcess(["service", "install"], { cwd: dir, env });
      assert.equal(result.code, 0, result.stderr);
      const unit = await Deno.readTextFile(`${unitDir}/lifeline-watch.service`);
      const deno = Deno.execPath();
      assert.match(unit, /^Environment=XDG_CONFIG_HOME=.*\/xdg$/m);
      assert.ok(
        unit.includes(
          `\nExecStart=${deno} run --quiet --allow-all --v8-flags=--max-semi-space-size=2 ${REPO_DIR}/main.ts watch tmux\n`,
        ),
        unit,
      );
    });
  },
});

Deno.test({
  name: "a systemctl that fails stops the install with its own words and where to look",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      // The manager looks in ~/.config, the units went to $XDG_CONFIG_HOME: enable cannot find them.
      const place = await systemdPlace(dir);
      const env = { ...place.env, XDG_CONFIG_HOME: `${dir}/elsewhere` };
      const result = await runInProcess(["service", "install"], { cwd: dir, env });
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr,
        "error: `systemctl --user enable lifeline-watch.service` failed: Failed to enable unit: " +
          "Unit file lifeline-watch.service does not exist.\n" +
          "hint: see `systemctl --user status lifeline-watch.service`\n",
      );
    });
  },
});

Deno.test({
  name: "macOS: launchd agents in ~/Library/LaunchAgents, bootstrapped into gui/<uid>",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const manager = await fakeLaunchctl(dir);
      await fakeLifeline(`${dir}/bin`);
      const env = { HOME: `${dir}/home`, PATH: `${manager.bin}:${dir}/bin:/usr/bin:/bin` };
      const run = (...args: string[]) =>
        runInProcess(["service", ...args, "--manager", "launchd"], { cwd: dir, env });
      const result = await run("install");
      assert.equal(result.code, 0, result.stderr);
      const agents = `${dir}/home/Library/LaunchAgents`;
      const plist = await Deno.readTextFile(`${agents}/dev.lifeline.daemon.plist`);
      assert.match(plist, /<key>Label<\/key><string>dev\.lifeline\.daemon<\/string>/);
      assert.ok(
        plist.includes(
          `  <array>\n    <string>${dir}/bin/lifeline</string>\n    <string>daemon</string>\n    <string>stale</string>\n  </array>`,
        ),
        plist,
      );
      assert.match(plist, /<key>KeepAlive<\/key><dict><key>SuccessfulExit<\/key><false\/><\/dict>/);
      assert.ok(
        plist.includes(
          `<string>${dir}/home/.local/state/lifeline/logs/daemon.service.log</string>`,
        ),
      );
      const uid = Deno.uid();
      assert.deepEqual(await manager.calls(), [
        `launchctl print gui/${uid}/dev.lifeline.watch`,
        `launchctl print gui/${uid}/dev.lifeline.daemon`,
        `launchctl enable gui/${uid}/dev.lifeline.watch`,
        `launchctl bootstrap gui/${uid} ${agents}/dev.lifeline.watch.plist`,
        `launchctl enable gui/${uid}/dev.lifeline.daemon`,
        `launchctl bootstrap gui/${uid} ${agents}/dev.lifeline.daemon.plist`,
      ]);
      await manager.clear();
      assert.match((await run("install")).stdout, /Nothing changed/);
      assert.equal((await manager.calls()).length, 2, "two questions, nothing done");
      await manager.clear();
      assert.equal((await run("uninstall")).code, 0);
      assert.deepEqual((await manager.calls()).filter((c) => !c.includes(" print ")), [
        `launchctl bootout gui/${uid}/dev.lifeline.watch`,
        `launchctl bootout gui/${uid}/dev.lifeline.daemon`,
      ]);
      assert.deepEqual(await Array.fromAsync(Deno.readDir(agents)), []);
    });
  },
});

Deno.test({
  name: "no systemd user instance (a container): says so, and its tmux command runs both",
  ignore: IGNORE,
  async fn() {
    await withTempDir(async (dir) => {
      const place = await systemdPlace(dir, "offline");
      const state = `${dir}/state`;
      await Deno.mkdir(state);
      const env = { ...place.env, LIFELINE_STATE_DIR: state };
      const result = await runInProcess(["service", "install"], { cwd: dir, env });
      assert.equal(result.code, 1);
      assert.match(
        result.stdout,
        /^No service manager to install into: `systemctl --user is-system-running` says "offline": no systemd user instance\.$/m,
      );
      const command = result.stdout.trim().split("\n").at(-1)!.trim();
      assert.equal(
        command,
        `tmux new-session -d -s lifeline '${dir}/bin/lifeline watch tmux' \\; new-window -d -t lifeline: '${dir}/bin/lifeline daemon stale'`,
      );
      await assert.rejects(Deno.stat(place.unitDir), Deno.errors.NotFound, "nothing written");
      // The command as printed, in a shell, on a tmux server of the test's own: a `tmux` first on
      // PATH names it.
      const server = `lifeline-test-${crypto.randomUUID().slice(0, 8)}`;
      const realTmux = (await onPath("tmux", Deno.env.get("PATH")))!;
      await Deno.mkdir(`${dir}/tmux`);
      await Deno.writeTextFile(
        `${dir}/tmux/tmux`,
        `#!/bin/sh\nexec ${realTmux} -L ${server} "$@"\n`,
      );
      await Deno.chmod(`${dir}/tmux/tmux`, 0o755);
      try {
        const shell = await new Deno.Command("sh", {
          args: ["-c", command],
          env: { ...env, PATH: `${dir}/tmux:${place.env.PATH}` },
          clearEnv: true,
        }).output();
        assert.ok(shell.success, new TextDecoder().decode(shell.stderr));
        for (let i = 0; i < 50 && (await Array.fromAsync(Deno.readDir(state))).length < 2; i++) {
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(await Deno.readTextFile(`${state}/ran-watch`), "watch tmux\n");
        assert.equal(await Deno.readTextFile(`${state}/ran-daemon`), "daemon stale\n");
      } finally {
        await new Deno.Command(realTmux, { args: ["-L", server, "kill-server"], stderr: "null" })
          .output();
      }
    });
  },
});

/** Why the real `systemctl --user` cannot be used here, or null when it can. */
async function noUserSystemd(): Promise<string | null> {
  try {
    const probe = await new Deno.Command("systemctl", { args: ["--user", "is-system-running"] })
      .output();
    const said = new TextDecoder().decode(probe.stdout).trim();
    return ["running", "degraded"].includes(said)
      ? null
      : `systemctl --user is-system-running: "${said}"`;
  } catch {
    return "systemctl is not installed";
  }
}

const realReason = IGNORE ? "not on Windows" : await noUserSystemd();

Deno.test({
  // Where there is no user instance, the test is reported as ignored, with the reason in its name.
  name:
    "the real systemctl --user runs the units, install again changes nothing, uninstall stops them" +
    (realReason === null ? "" : ` (skipped: ${realReason})`),
  ignore: realReason !== null,
  async fn() {
    await withTempDir(async (dir) => {
      // A unit name of its own, so a real lifeline install is never touched; a binary directory
      // with a space and a %, to hold the quoting to systemd's own parser.
      const prefix = `lifeline-test-${crypto.randomUUID().slice(0, 8)}`;
      const bin = `${dir}/my bin%`;
      await fakeLifeline(bin);
      const state = `${dir}/state`;
      await Deno.mkdir(state);
      const env = {
        ...Deno.env.toObject(),
        PATH: `${bin}:${Deno.env.get("PATH")}`,
        LIFELINE_STATE_DIR: state,
      };
      const open = () =>
        openServices(env, { run: programRunner(env), os: Deno.build.os, uid: Deno.uid()!, prefix });
      const services = await open();
      assert.equal(services.detected.manager, "systemd");
      try {
        const installed = await installServices(services);
        assert.deepEqual(installed.changes.map((c) => c.change.kind), ["created", "created"]);
        for (let i = 0; i < 50 && (await Array.fromAsync(Deno.readDir(state))).length < 3; i++) {
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(await Deno.readTextFile(`${state}/ran-watch`), "watch tmux\n");
        assert.equal(await Deno.readTextFile(`${state}/ran-daemon`), "daemon stale\n");
        const again = await installServices(await open());
        assert.deepEqual(again.actions, []);
      } finally {
        const removed = await uninstallServices(await open());
        assert.deepEqual(removed.changes.map((c) => c.change.kind), ["removed", "removed"]);
      }
      const active = await new Deno.Command("systemctl", {
        args: ["--user", "is-active", `${prefix}-watch.service`],
      }).output();
      assert.equal(new TextDecoder().decode(active.stdout).trim(), "inactive");
    });
  },
});
