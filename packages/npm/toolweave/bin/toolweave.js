#!/usr/bin/env node
// The `toolweave` command of the npm package: starts the toolweave binary from the platform
// package npm installed beside this one (`@toolweave/<os>-<cpu>`, an optional dependency that npm
// picks by its `os`, `cpu` and `libc`). Arguments, stdin, stdout and stderr go to the binary
// untouched (stdout is the MCP protocol), signals sent to this process are passed on, and this
// process ends the way the binary ended: with its exit code, or by its signal.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const manifest = require("../package.json");

const SCOPE = "@toolweave/";
const REPOSITORY = "https://github.com/toolweave/toolweave";

// Signals a client or a terminal sends to stop or reload a server. SIGUSR1 stays Node's own (it
// opens the inspector); SIGKILL and SIGSTOP cannot be caught, and reach only this process.
const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR2"];

/** The platform package's name part for this machine, as npm names `os` and `cpu`. */
function platformKey() {
  return `${process.platform}-${process.arch}`;
}

/** The path of the binary in the installed platform package, or null when none is installed. */
function findBinary(key) {
  try {
    return require.resolve(`${SCOPE}${key}/bin/toolweave`);
  } catch {
    return null;
  }
}

/** Whether this Linux runs on musl (Alpine) rather than glibc: Node reports glibc only. */
function isMusl() {
  const report = process.report && process.report.getReport();
  return !(report && report.header && report.header.glibcVersionRuntime);
}

/** Says why no binary could be started here and how to get one, then ends with status 1. */
function explainMissing(key) {
  const available = Object.keys(manifest.optionalDependencies || {})
    .filter((name) => name.startsWith(SCOPE))
    .map((name) => name.slice(SCOPE.length));
  let why;
  if (process.platform === "linux" && isMusl()) {
    why =
      `toolweave's Linux binaries need glibc, and this system's C library is musl ` +
      `(Alpine or similar), so npm installed none of them.`;
  } else if (available.includes(key)) {
    why =
      `The package ${SCOPE}${key}, which holds the binary for this platform, is not installed. ` +
      `npm leaves it out when optional dependencies are omitted (--omit=optional, ` +
      `--no-optional, or "omit" in .npmrc) or when node_modules was installed on another ` +
      `platform; install toolweave again without omitting optional dependencies.`;
  } else {
    why = `toolweave has no prebuilt binary for ${process.platform} on ${process.arch} (${key}).`;
  }
  process.stderr.write(
    `toolweave: ${why}\n` +
      `Prebuilt binaries exist for: ${available.join(", ") || "none"}.\n` +
      `To build it from source instead (Rust 1.95 or newer, about 10 minutes on two cores):\n` +
      `  cargo install --locked --git ${REPOSITORY} toolweave\n` +
      `then use the installed \`toolweave\` in place of \`npx toolweave\`.\n`,
  );
  process.exit(1);
}

/** Ends this process as the binary ended, so the caller sees the same status. */
function endLike(code, signal) {
  if (signal === null) {
    process.exit(code === null ? 1 : code);
  }
  for (const name of FORWARDED_SIGNALS) {
    process.removeAllListeners(name);
  }
  process.kill(process.pid, signal);
  // Still here: the signal is one whose default is to carry on. Report it as a shell would.
  process.exit(128 + (os.constants.signals[signal] || 0));
}

function main() {
  const key = platformKey();
  const binary = findBinary(key);
  if (binary === null) {
    explainMissing(key);
  }
  const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
  for (const name of FORWARDED_SIGNALS) {
    // Sent to a child that has just ended, the signal is dropped: its end is on its way.
    process.on(name, () => child.kill(name));
  }
  child.on("error", (error) => {
    process.stderr.write(`toolweave: cannot start ${binary}: ${error.message}\n`);
    process.exit(1);
  });
  child.on("exit", endLike);
}

main();
