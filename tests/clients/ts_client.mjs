// Acceptance client: the official TypeScript MCP SDK (@modelcontextprotocol/client 2.x)
// talking to the Switchboard router.
//
// Usage: node ts_client.mjs URL [--everything PREFIX] [--fixture PREFIX] [--separator S] [--modes auto,legacy]
//
// For each mode (`auto` = versionNegotiation {mode: 'auto'}: server/discover first, so
// 2026-07-28 with the router; `legacy` = the 2025-11-25 initialize handshake and a session)
// it connects over Streamable HTTP, lists every tool (following cursors), checks that both
// upstreams' prefixed tools are there, calls one tool of each and checks the results.
// Prints one JSON summary on stdout; exits 1 on any failure, with the reason in the summary.
// The SDK is loaded from .cache/node (scripts/setup.sh test), or SWITCHBOARD_NODE_DIR.

import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeDir = process.env.SWITCHBOARD_NODE_DIR ?? path.join(here, '..', '..', '.cache', 'node');
const pkgDir = path.join(nodeDir, 'node_modules', '@modelcontextprotocol', 'client');
const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(pkgDir, pkg.exports['.'].import.default)).href
);

function parseArgs(argv) {
  const opts = { everything: 'everything', fixture: 'fixture', separator: '__', modes: 'auto,legacy' };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const key = a.slice(2);
      if (!(key in opts) || i + 1 >= argv.length) throw new Error(`bad option ${a}`);
      opts[key] = argv[++i];
    } else rest.push(a);
  }
  if (rest.length !== 1) throw new Error('usage: ts_client.mjs URL [--everything P] [--fixture P] [--separator S] [--modes auto,legacy]');
  return { url: rest[0], ...opts };
}

const textOf = (r) => (r.content ?? []).map((b) => b.text ?? '').join('');

function check(cond, message) {
  if (!cond) throw new Error(message);
}

async function runMode(o, mode) {
  const out = { mode };
  const client = new Client(
    { name: 'switchboard-acceptance', version: '1.0.0' },
    { versionNegotiation: { mode } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(o.url));
  await client.connect(transport, { timeout: 30_000 });
  try {
    out.protocol_version = client.getNegotiatedProtocolVersion();
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    out.tools = names.length;
    const { everything: ev, fixture: fx, separator: s } = o;
    const want = [`${ev}${s}echo`, `${ev}${s}get-sum`, `${fx}${s}echo`, `${fx}${s}add`];
    const missing = want.filter((n) => !names.includes(n));
    check(missing.length === 0, `tools missing from tools/list: ${missing} (got ${names.sort()})`);
    const unprefixed = names.filter((n) => !n.startsWith(ev + s) && !n.startsWith(fx + s));
    check(unprefixed.length === 0, `tools without a server prefix: ${unprefixed}`);

    let r = await client.callTool({ name: `${ev}${s}echo`, arguments: { message: 'hello from ts' } });
    check(!r.isError && textOf(r) === 'Echo: hello from ts', `${ev}${s}echo returned ${JSON.stringify(r)}`);
    r = await client.callTool({ name: `${fx}${s}echo`, arguments: { text: 'hello from ts' } });
    check(!r.isError && textOf(r) === 'hello from ts', `${fx}${s}echo returned ${JSON.stringify(r)}`);
    check(r.structuredContent?.text === 'hello from ts', `${fx}${s}echo structuredContent ${JSON.stringify(r.structuredContent)}`);
    r = await client.callTool({ name: `${ev}${s}get-sum`, arguments: { a: 2, b: 40 } });
    check(!r.isError && textOf(r).includes('42'), `${ev}${s}get-sum returned ${JSON.stringify(r)}`);
    out.calls = 3;
  } finally {
    await client.close();
  }
  return out;
}

const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`${what} timed out after ${ms} ms`)), ms).unref())]);

const o = parseArgs(process.argv.slice(2));
const summary = { client: `@modelcontextprotocol/client ${pkg.version}`, url: o.url, runs: [], ok: true };
for (const mode of o.modes.split(',').filter(Boolean)) {
  try {
    summary.runs.push(await withTimeout(runMode(o, mode), 90_000, `mode ${mode}`));
  } catch (e) {
    summary.ok = false;
    summary.runs.push({ mode, error: `${e?.name ?? 'Error'}: ${e?.message ?? e}` });
  }
}
// Write and wait for the flush: Node may drop piped stdout on exit.
await new Promise((resolve) => process.stdout.write(JSON.stringify(summary) + '\n', resolve));
process.exit(summary.ok ? 0 : 1);
