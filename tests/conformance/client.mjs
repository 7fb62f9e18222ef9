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
// its own for the logins. `initialize` runs `toolweave servers`. A scenario whose server asks the
// person a question runs its program with `execute_code` of `toolweave serve`, from an MCP client
// (the MCP SDK) that accepts what it is asked. Every other scenario runs `toolweave run` with a
// program that calls the scenario's tool (or the calls its context names); when that fails naming
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

/// Scenarios whose server asks the person (elicitation) before a call completes: `toolweave run`
/// has nobody to ask, so these run through `toolweave serve` over stdio, with an MCP client that
/// accepts what it is asked, as a person at an MCP client would. toolweave passes the server's
/// questions to that client and retries the call with its answers.
const PERSON_ANSWERS = new Set(['sep-2322-client-request-state']);

/// Runs `code` with `execute_code` of `toolweave serve`, as an MCP client that declares
/// elicitation and accepts every question; whether the execution succeeded.
async function throughServe(code) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const client = new Client(
    { name: 'conformance-person', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    console.log(`asked: ${request.params.message}`);
    return { action: 'accept', content: { confirmed: true } };
  });
  console.log('$ toolweave serve --config ... (execute_code from an MCP client)');
  const transport = new StdioClientTransport({
    command: binary,
    args: ['serve', '--config', config],
    env: { ...process.env, XDG_CONFIG_HOME: join(home, 'config') },
    stderr: 'inherit',
  });
  await client.connect(transport);
  try {
    const result = await client.callTool(
      { name: 'execute_code', arguments: { code, language: 'javascript' } },
      undefined,
      { timeout: 60_000 },
    );
    for (const block of result.content ?? []) if (block.type === 'text') console.log(block.text);
    return !result.isError;
  } finally {
    await client.close();
  }
}

/// A program that calls the server's `tool` with `args`, and the next ones after it.
function calls(list) {
  return list
    .map(([tool, args]) => `await tools.conformance.${tool}(${JSON.stringify(args)});`)
    .join('\n');
}

/// The program that calls the scenario's tool (or tools: the calls the scenario's context
/// names, in order).
function program() {
  if (Array.isArray(context.toolCalls)) {
    return calls(context.toolCalls.map((call) => [call.name, call.arguments ?? {}]));
  }
  switch (scenario) {
    case 'tools_call':
      return 'return await tools.conformance.add_numbers({ a: 5, b: 3 })';
    case 'sse-retry':
      return 'return await tools.conformance.test_reconnection({})';
    case 'elicitation-sep1034-client-defaults':
      return 'return await tools.conformance.test_client_elicitation_defaults({})';
    case 'sep-2322-client-request-state':
      // Two calls that ask for input (with and without requestState), one call between
      // them that must carry nothing of theirs, and one whose result has no resultType.
      return calls([
        ['test_mrtr_echo_state', {}],
        ['test_mrtr_unrelated', {}],
        ['test_mrtr_no_state', {}],
        ['test_mrtr_no_result_type', {}],
      ]);
    case 'http-invalid-tool-headers':
      return calls([['valid_tool', { region: 'us-west1' }]]);
    case 'json-schema-2020-12-preservation':
      // The tool's input schema as toolweave holds it (code reads it through describeTools),
      // sent back through the server's echo tool.
      return [
        "const described = await describeTools(['conformance.json_schema_2020_12_tool']);",
        "const tool = described.tools.find((entry) => entry.tool === 'json_schema_2020_12_tool');",
        'return await tools.conformance.json_schema_echo({ schema: tool.inputSchema });',
      ].join('\n');
    default:
      return 'return await tools.conformance.test_tool({})';
  }
}

if (scenario === 'initialize') {
  process.exit(toolweave(['servers', '--config', config]).ok ? 0 : 1);
}
if (PERSON_ANSWERS.has(scenario)) {
  process.exit((await throughServe(program())) ? 0 : 1);
}
const run = ['run', '--config', config, '--isolation', 'in-process', '-'];
const login = ['login', SERVER, '--config', config, '--browser-command', browser, '--timeout-ms', '20000'];
for (let logins = 0; ; logins += 1) {
  const call = toolweave(run, program());
  if (call.ok) process.exit(0);
  if (logins === MAX_LOGINS || !call.output.includes(`toolweave login ${SERVER}`)) process.exit(1);
  // A login that fails is tried again while the error names it, as a person would: the server
  // may have moved to another authorization server since (auth/authorization-server-migration).
  toolweave(login);
}
