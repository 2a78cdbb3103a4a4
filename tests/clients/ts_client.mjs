// One real client of the TypeScript MCP SDK 2.x (@modelcontextprotocol/client)
// against stephost, run by Node 22 (node_modules/.bin/node) and driven by
// tests/e2e/test_clients.py:
//
//   node ts_client.mjs --transport stdio --mode auto -- stephost serve --tools browser,rf,testkit
//   node ts_client.mjs --transport http --mode legacy --url http://127.0.0.1:PORT/mcp [--token T [--auth oauth]]
//
// `--mode` maps to the SDK's `versionNegotiation.mode`: `auto` (probe
// `server/discover`, fall back to `initialize`), `2026-07-28` (`{ pin }`, the
// stateless revision, no fallback) or `legacy` (the 2025 `initialize`
// handshake). It lists the tools, makes the calls of plan.json and prints ONE
// JSON line, the same shape as python_client.py: the negotiated version, what
// went over the wire (each request's method and `_meta` version claim, the
// server's `initialize` answer, the `MCP-Protocol-Version` header of each POST),
// the tool names and, per call, `isError`, `structuredContent` and the text
// blocks (as text, never parsed). A failure is reported in `error` (exit status
// 0 all the same); only a broken invocation exits 2. Over HTTP the token goes
// in an `Authorization` header (`--auth header`), comes from a plain
// `AuthProvider` (`--auth provider`, the SDK's way to send an API key), or is the
// stored access token of an `OAuthClientProvider` (`--auth oauth`), which on a
// 401 runs the SDK's OAuth discovery; its `redirectToAuthorization` only records
// that it was asked to send a user to an authorization page.
import { readFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const PLAN = JSON.parse(readFileSync(new URL('./plan.json', import.meta.url), 'utf8'));
const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const MODES = { auto: 'auto', '2026-07-28': { pin: '2026-07-28' }, legacy: 'legacy' };

function usage(message) {
  process.stderr.write(`ts_client.mjs: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { command: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      args.command = argv.slice(i + 1);
      break;
    }
    if (!['--transport', '--mode', '--url', '--token', '--auth'].includes(a)) usage(`unknown argument ${a}`);
    if (i + 1 >= argv.length) usage(`${a} needs a value`);
    args[a.slice(2)] = argv[++i];
  }
  if (!['stdio', 'http'].includes(args.transport)) usage('--transport stdio|http');
  if (!(args.mode in MODES)) usage('--mode auto|2026-07-28|legacy');
  if (args.transport === 'http' && !args.url) usage('http needs --url');
  args.auth ??= 'header';
  if (!['header', 'provider', 'oauth'].includes(args.auth)) usage('--auth header|provider|oauth');
  if (args.transport === 'stdio' && !args.command.length) usage('stdio needs the server command after --');
  return args;
}

/** What the client put on the wire and what the server answered to the handshake. */
class Wire {
  requests = []; // [{method, version}], version = the `_meta` claim or null
  methods = new Map(); // request id -> method
  initialize_result_version = null;
  http_versions = []; // MCP-Protocol-Version of each POST (null when absent)
  http = []; // [{method, path, status, www_authenticate}] of every HTTP exchange
  authorization_redirects = []; // URLs an OAuth flow wanted to send a user to

  sent(message) {
    for (const m of Array.isArray(message) ? message : [message]) {
      if (m && 'method' in m && 'id' in m) {
        this.requests.push({ method: m.method, version: m.params?._meta?.[VERSION_KEY] ?? null });
        this.methods.set(m.id, m.method);
      }
    }
  }

  received(message) {
    if (this.methods.get(message?.id) === 'initialize' && message.result) {
      this.initialize_result_version = message.result.protocolVersion ?? null;
    }
  }

  /** Wraps `transport` so every message in and out passes `sent`/`received`. */
  tap(transport) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      this.sent(message);
      return send(message, options);
    };
    let handler;
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      get: () => handler && ((message, extra) => (this.received(message), handler(message, extra))),
      set: (h) => (handler = h),
    });
    return transport;
  }

  fetch = async (url, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    if (method === 'POST') this.http_versions.push(new Headers(init.headers).get('mcp-protocol-version'));
    const response = await fetch(url, init);
    this.http.push({
      method,
      path: new URL(url instanceof Request ? url.url : url).pathname,
      status: response.status,
      www_authenticate: response.headers.get('www-authenticate'),
    });
    return response;
  };

  /** An `OAuthClientProvider` whose only credential is `token`. */
  oauthProvider(token) {
    let client;
    let tokens = { access_token: token, token_type: 'Bearer' };
    return {
      redirectUrl: 'http://127.0.0.1:9/callback',
      clientMetadata: { client_name: 'stephost-e2e', redirect_uris: ['http://127.0.0.1:9/callback'] },
      clientInformation: () => client,
      saveClientInformation: (info) => void (client = info),
      tokens: () => tokens,
      saveTokens: (t) => void (tokens = t),
      redirectToAuthorization: (url) => {
        this.authorization_redirects.push(String(url));
        throw new Error(`the OAuth flow wanted a user at ${url}`);
      },
      saveCodeVerifier: () => {},
      codeVerifier: () => 'unused',
    };
  }

  report() {
    const { requests, initialize_result_version, http_versions, http, authorization_redirects } = this;
    return { requests, initialize_result_version, http_versions, http, authorization_redirects };
  }
}

/** Name, message, HTTP status and causes of `err`, flattened for the caller. */
function describeError(err) {
  const parts = [];
  const statuses = [];
  for (let e = err, depth = 0; e && depth < 8; e = e.cause, depth++) {
    parts.push(`${e.name ?? typeof e}: ${e.message ?? String(e)}`);
    const status = e.status ?? e.code ?? e.data?.status;
    if (typeof status === 'number' && status >= 100 && status < 600) statuses.push(status);
    if (e.data && typeof e.data === 'object') parts.push(`data: ${JSON.stringify(e.data)}`);
  }
  return { type: err?.name ?? typeof err, message: parts.join(' | '), http_status: statuses };
}

function resultRecord(result) {
  return {
    is_error: result.isError ?? false,
    structured: result.structuredContent ?? null,
    text: (result.content ?? []).filter((b) => b.type === 'text').map((b) => b.text),
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const sdkVersion = JSON.parse(
    readFileSync(new URL('./node_modules/@modelcontextprotocol/client/package.json', import.meta.url), 'utf8'),
  ).version;
  const out = {
    sdk: 'typescript',
    sdk_version: sdkVersion,
    transport: args.transport,
    mode: args.mode,
    protocol_version: null,
    discover_versions: null,
    server_name: null,
    tools: null,
    calls: {},
    wire: null,
    error: null,
  };
  const wire = new Wire();
  const transport =
    args.transport === 'stdio'
      ? new StdioClientTransport({
          command: args.command[0],
          args: args.command.slice(1),
          env: process.env,
          stderr: 'inherit',
        })
      : new StreamableHTTPClientTransport(new URL(args.url), {
          fetch: wire.fetch,
          requestInit:
            args.token && args.auth === 'header' ? { headers: { Authorization: `Bearer ${args.token}` } } : undefined,
          authProvider: !args.token
            ? undefined
            : args.auth === 'oauth'
              ? wire.oauthProvider(args.token)
              : args.auth === 'provider'
                ? { token: async () => args.token }
                : undefined,
        });
  const client = new Client(
    { name: 'stephost-e2e-ts', version: '1' },
    { versionNegotiation: { mode: MODES[args.mode] } },
  );
  try {
    await client.connect(wire.tap(transport), { timeout: 30_000 });
    out.protocol_version = client.getNegotiatedProtocolVersion() ?? null;
    out.discover_versions = client.getDiscoverResult()?.supportedVersions ?? null;
    out.server_name = client.getServerVersion()?.name ?? null;
    out.tools = (await client.listTools()).tools.map((t) => t.name);
    for (const call of PLAN.calls) {
      const result = await client.callTool({ name: call.tool, arguments: call.arguments }, { timeout: 60_000 });
      out.calls[call.name] = resultRecord(result);
    }
  } catch (err) {
    out.error = describeError(err);
  } finally {
    out.wire = wire.report();
    await client.close().catch(() => {});
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

await main();
