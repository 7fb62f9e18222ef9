// The client the MCP conformance suite tests in client mode: toolweave's own upstream client,
// driven the way a person drives it.
//
// The suite runs `node client.mjs <server-url>` with MCP_CONFORMANCE_SCENARIO set (and
// MCP_CONFORMANCE_CONTEXT holding a scenario's data, such as a pre-registered client).
// TOOLWEAVE_BIN names the toolweave binary; TOOLWEAVE_BROWSER the command that plays the person's
// browser for `toolweave login` (it opens the authorization URL and follows the redirects to
// toolweave's loopback listener).
//
// Each scenario gets a config with the one server (named "conformance") and a config directory of
// its own for the logins. `initialize` runs `toolweave servers`. Every other scenario runs
// `toolweave run` with a program that calls the scenario's tool; when that fails naming
// `toolweave login`, it runs `toolweave login` as the error says, then the program again, at most
// three logins in all. The exit status is toolweave's.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SERVER = 'conformance';
const MAX_LOGINS = 3;
/// The client ID metadata document the suite's authorization servers accept as a client ID.
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

const url = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const binary = process.env.TOOLWEAVE_BIN;
const browser = process.env.TOOLWEAVE_BROWSER;
if (!url || !binary || !browser) {
  console.error('usage: TOOLWEAVE_BIN=... TOOLWEAVE_BROWSER=... node client.mjs <server-url>');
  process.exit(2);
}
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');

const home = mkdtempSync(join(tmpdir(), 'toolweave-conformance-'));
const entry = { type: 'http', url };
if (context.client_id) {
  entry.oauth = { clientId: context.client_id };
  if (context.client_secret) entry.oauth.clientSecret = context.client_secret;
} else if (scenario.startsWith('auth/')) {
  entry.oauth = { clientMetadataUrl: CLIENT_METADATA_URL };
}
const config = join(home, 'mcp.json');
writeFileSync(config, JSON.stringify({ mcpServers: { [SERVER]: entry } }, null, 2));

/// Runs toolweave with `args` (and `input` on stdin); its output is passed on.
function toolweave(args, input) {
  console.log(`$ toolweave ${args.join(' ')}`);
  const run = spawnSync(binary, args, {
    input,
    encoding: 'utf8',
    env: { ...process.env, XDG_CONFIG_HOME: join(home, 'config') },
    timeout: 60_000,
  });
  process.stdout.write(run.stdout ?? '');
  process.stdout.write(run.stderr ?? '');
  if (run.error) console.log(`(${run.error.message})`);
  return { ok: run.status === 0, output: `${run.stdout}\n${run.stderr}` };
}

/// The program that calls the scenario's tool.
function program() {
  switch (scenario) {
    case 'tools_call':
      return 'return await tools.conformance.add_numbers({ a: 5, b: 3 })';
    case 'sse-retry':
      return 'return await tools.conformance.test_reconnection({})';
    case 'elicitation-sep1034-client-defaults':
      return 'return await tools.conformance.test_client_elicitation_defaults({})';
    default:
      return 'return await tools.conformance.test_tool({})';
  }
}

if (scenario === 'initialize') {
  process.exit(toolweave(['servers', '--config', config]).ok ? 0 : 1);
}
const run = ['run', '--config', config, '--isolation', 'in-process', '-'];
const login = ['login', SERVER, '--config', config, '--browser-command', browser, '--timeout-ms', '20000'];
for (let logins = 0; ; logins += 1) {
  const call = toolweave(run, program());
  if (call.ok) process.exit(0);
  if (logins === MAX_LOGINS || !call.output.includes(`toolweave login ${SERVER}`)) process.exit(1);
  if (!toolweave(login).ok) process.exit(1);
}
