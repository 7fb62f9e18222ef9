"""Checks the packages `scripts/release` made, installed as a user would install them: the npm
tarballs into an empty folder (no registry), the wheel into a fresh virtual environment, and the
wheel through uv and pipx. Each runs the README's example against the fixture server; the npm
launcher is also checked for what it passes through (stdio, exit codes, signals) and for what it
says when no platform package fits.

    TOOLWEAVE_DIST=dist TOOLWEAVE_FIXTURE=target/debug/toolweave-fixture \\
        python3 packages/tests/test_packages.py -v

`.ci/packages` builds the packages from the debug binary and runs this.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples/hello.ts"
# What examples/hello.ts prints, as README.md shows it.
EXAMPLE_RESULT = {"sum": 7, "warmest": "Oslo", "conditions": "cloudy"}
GLIBC_VERSION = re.compile(r"\bGLIBC_(\d+)\.(\d+)")
# npm without its advice and progress.
QUIET_NPM = ["--no-audit", "--no-fund", "--loglevel=error"]
# Generous bounds for a loaded two-core machine.
PATIENCE_SECONDS = 60


def environment(name: str) -> Path:
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(f"{name} is not set: see this file's docstring")
    return Path(value).resolve()


def run(command: list[str], **options) -> subprocess.CompletedProcess:
    """Runs a command to its end, capturing its output as text."""
    options.setdefault("timeout", PATIENCE_SECONDS)
    return subprocess.run(command, check=False, capture_output=True, text=True, **options)


def write_config(folder: Path, fixture: Path) -> Path:
    """examples/mcp.json with the fixture server at an absolute path."""
    config = folder / "mcp.json"
    servers = {
        "demo": {"command": str(fixture), "args": ["--name", "demo"]},
        "weather": {"command": str(fixture), "args": ["--name", "weather"]},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    return config


class Packages(unittest.TestCase):
    """The artifacts of one `scripts/release` run, installed once for every test."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.dist = environment("TOOLWEAVE_DIST")
        cls.fixture = environment("TOOLWEAVE_FIXTURE")
        cls.work = Path(tempfile.mkdtemp(prefix="toolweave-packages-"))
        cls.config = write_config(cls.work, cls.fixture)
        cls.binary = cls.single("toolweave-*-x86_64-unknown-linux-gnu")
        cls.launcher_tarball = cls.single("toolweave-[0-9]*.tgz")
        cls.platform_tarball = cls.single("toolweave-linux-x64-*.tgz")
        cls.wheel = cls.single("toolweave-*.whl")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def single(cls, pattern: str) -> Path:
        found = sorted(cls.dist.glob(pattern))
        if len(found) != 1:
            raise AssertionError(f"expected one {pattern} in {cls.dist}, found {found}")
        return found[0]

    @classmethod
    def npm_install(cls, name: str, tarballs: list[Path], *flags: str) -> Path:
        """Installs tarballs into an empty folder, with an empty cache and no registry."""
        folder = cls.work / name
        folder.mkdir()
        (folder / "package.json").write_text('{"private": true}')
        command = [
            "npm",
            "install",
            *QUIET_NPM,
            "--offline",
            "--cache",
            str(cls.work / "npm-cache"),
        ]
        result = run([*command, *flags, *map(str, tarballs)], cwd=folder, timeout=300)
        if result.returncode != 0:
            raise AssertionError(f"npm install failed:\n{result.stdout}{result.stderr}")
        return folder

    def assert_example_runs(self, command: list[str], **options) -> None:
        """The README's example, through `command`, prints the README's result."""
        result = run([*command, "run", str(EXAMPLE), "--config", str(self.config)], **options)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout), EXAMPLE_RESULT)
        self.assertIn("checked 3 cities", result.stderr)


class Npm(Packages):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.npm_folder = cls.npm_install("npm", [cls.launcher_tarball, cls.platform_tarball])

    def test_npx_runs_the_example_from_the_installed_tarballs(self) -> None:
        self.assert_example_runs(["npx", "--offline", "toolweave"], cwd=self.npm_folder)

    def test_the_platform_package_holds_the_released_binary(self) -> None:
        installed = self.npm_folder / "node_modules/@toolweave/linux-x64/bin/toolweave"
        self.assertTrue(os.access(installed, os.X_OK), f"{installed} is not executable")
        self.assertEqual(installed.read_bytes(), self.binary.read_bytes())

    def test_exit_code_and_output_are_the_binarys(self) -> None:
        # The binary as the platform package installed it: clap's usage names argv[0].
        binary = self.npm_folder / "node_modules/@toolweave/linux-x64/bin/toolweave"
        for arguments in (["run", "no-such-file.ts"], ["--version"], ["no-such-command"]):
            direct = run([str(binary), *arguments])
            launched = run([*self.launcher(), *arguments])
            self.assertEqual(
                (launched.returncode, launched.stdout, launched.stderr),
                (direct.returncode, direct.stdout, direct.stderr),
                arguments,
            )
        self.assertNotEqual(direct.returncode, 0)

    def test_stdio_serving_passes_the_protocol_through_untouched(self) -> None:
        with self.serve() as server:
            answers = self.exchange(
                server,
                [
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {
                            "name": "execute_code",
                            "arguments": {"code": "return await tools.demo.add({a: 2, b: 5})"},
                        },
                    },
                ],
            )
            server.stdin.close()
            self.assertEqual(server.wait(PATIENCE_SECONDS), 0)
            # Nothing but protocol came out: every line was a JSON-RPC message (parsed above),
            # and nothing followed the last answer.
            self.assertEqual(server.stdout.read(), "")
        self.assertEqual(answers[1]["result"]["structuredContent"]["result"], "7")

    def test_sigterm_reaches_the_binary_which_stops_gracefully(self) -> None:
        with self.serve() as server:
            self.exchange(server, [])
            binary = self.child_of(server.pid)
            server.send_signal(signal.SIGTERM)
            self.assertEqual(server.wait(PATIENCE_SECONDS), 0, "toolweave ends 0 after SIGTERM")
        self.assertFalse(Path(f"/proc/{binary}").exists(), "the binary outlived its launcher")

    def test_death_by_signal_is_passed_on(self) -> None:
        # `run` does not catch SIGINT: the binary dies of it, and so must the launcher.
        program = self.work / "forever.js"
        program.write_text("while (true) {}")
        started = self.start(
            ["run", str(program), "--config", str(self.config), "--timeout-ms", "600000"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.child_of(started.pid)
        started.send_signal(signal.SIGINT)
        self.assertEqual(started.wait(PATIENCE_SECONDS), -signal.SIGINT)

    def test_without_the_platform_package_it_says_so(self) -> None:
        folder = self.npm_install("omitted", [self.launcher_tarball], "--omit=optional")
        result = run(["npx", "--offline", "toolweave", "--version"], cwd=folder)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stdout, "")
        self.assertIn(
            "toolweave: The package @toolweave/linux-x64, which holds the binary for this "
            "platform, is not installed.",
            result.stderr,
        )
        self.assertIn("--omit=optional", result.stderr)
        self.assertIn("Prebuilt binaries exist for: linux-x64.", result.stderr)
        self.assertIn("cargo install --locked --git", result.stderr)

    def test_on_a_platform_without_a_package_it_names_the_platforms_there_are(self) -> None:
        # A launcher whose list lacks this machine's platform, as on one toolweave has no build for.
        copy = self.work / "unsupported"
        shutil.copytree(self.npm_folder / "node_modules/toolweave", copy)
        manifest = json.loads((copy / "package.json").read_text())
        manifest["optionalDependencies"] = {"@toolweave/darwin-arm64": manifest["version"]}
        (copy / "package.json").write_text(json.dumps(manifest))
        result = run(["node", str(copy / "bin/toolweave.js"), "--version"])
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stdout, "")
        self.assertIn(
            "toolweave: toolweave has no prebuilt binary for linux on x64 (linux-x64).\n"
            "Prebuilt binaries exist for: darwin-arm64.\n",
            result.stderr,
        )

    def launcher(self) -> list[str]:
        """The `toolweave` command npm linked, which is the launcher."""
        return [str(self.npm_folder / "node_modules/.bin/toolweave")]

    def start(self, arguments: list[str], **options) -> subprocess.Popen:
        """Starts the launcher in a process group of its own, killed whole after the test."""
        started = subprocess.Popen(
            [*self.launcher(), *arguments], start_new_session=True, **options
        )

        def kill_group() -> None:
            try:
                os.killpg(started.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        self.addCleanup(kill_group)
        return started

    def serve(self) -> subprocess.Popen:
        """`toolweave serve` on stdio through the launcher."""
        return self.start(
            ["serve", "--config", str(self.config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def exchange(self, server: subprocess.Popen, requests: list[dict]) -> list[dict]:
        """Initializes the session, then sends each request and reads its answer."""
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "packages-test", "version": "1"},
            },
        }
        answers = [self.ask(server, initialize)]
        self.send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        answers += [self.ask(server, request) for request in requests]
        return answers

    def send(self, server: subprocess.Popen, message: dict) -> None:
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()

    def ask(self, server: subprocess.Popen, request: dict) -> dict:
        self.send(server, request)
        line = server.stdout.readline()
        answer = json.loads(line)
        self.assertEqual(answer.get("id"), request["id"], line)
        self.assertNotIn("error", answer, line)
        return answer

    def child_of(self, pid: int) -> int:
        """The launcher's child, the binary, once it has started."""
        deadline = time.monotonic() + PATIENCE_SECONDS
        while time.monotonic() < deadline:
            for task in Path(f"/proc/{pid}/task").iterdir():
                children = (task / "children").read_text().split()
                if children:
                    return int(children[0])
            time.sleep(0.05)
        raise AssertionError(f"the launcher {pid} started no binary")


class Wheel(Packages):
    def test_the_wheel_is_tagged_for_its_binarys_glibc(self) -> None:
        # scripts/release reads the floor from the binary itself; objdump must agree with it.
        symbols = run(["objdump", "-T", str(self.binary)]).stdout
        versions = {(int(major), int(minor)) for major, minor in GLIBC_VERSION.findall(symbols)}
        major, minor = max(versions | {(2, 17)})
        self.assertIn(f"-py3-none-manylinux_{major}_{minor}_x86_64", self.wheel.name)

    def test_pip_installs_the_command_into_a_fresh_venv(self) -> None:
        venv = self.work / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        result = run(
            [
                str(venv / "bin/pip"),
                "install",
                "--quiet",
                "--no-index",
                "--disable-pip-version-check",
                str(self.wheel),
            ],
            timeout=300,
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        installed = venv / "bin/toolweave"
        self.assertEqual(installed.read_bytes(), self.binary.read_bytes())
        self.assert_example_runs([str(installed)])

    def test_uvx_and_pipx_run_the_wheel(self) -> None:
        tools = os.environ.get("TOOLWEAVE_PYTHON_TOOLS")
        if not tools:
            self.skipTest("TOOLWEAVE_PYTHON_TOOLS does not name the folder holding uvx and pipx")
        uvx, pipx = shutil.which("uvx", path=tools), shutil.which("pipx", path=tools)
        self.assertIsNotNone(uvx, f"no uvx in {tools}")
        self.assertIsNotNone(pipx, f"no pipx in {tools}")
        isolated = {
            **os.environ,
            "UV_CACHE_DIR": str(self.work / "uv-cache"),
            "UV_TOOL_DIR": str(self.work / "uv-tools"),
            "PIPX_HOME": str(self.work / "pipx"),
        }
        options = {"env": isolated, "timeout": 300}
        self.assert_example_runs(
            [uvx, "--offline", "--from", str(self.wheel), "toolweave"], **options
        )
        self.assert_example_runs([pipx, "run", "--spec", str(self.wheel), "toolweave"], **options)


if __name__ == "__main__":
    outcome = unittest.main(exit=False).result
    failed = len(outcome.failures) + len(outcome.errors) + len(outcome.unexpectedSuccesses)
    skipped = len(outcome.skipped)
    passed = max(outcome.testsRun - failed - skipped, 0)  # A skipped class runs no test.
    print(f"packages: {passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(0 if outcome.wasSuccessful() else 1)
