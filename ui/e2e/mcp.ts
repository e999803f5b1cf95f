/**
 * An official MCP SDK client (@modelcontextprotocol/client, installed in .cache/node by
 * scripts/setup.sh test) for the e2e tests: calls go through the router's `/mcp` like any
 * client's would.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './stack';

interface SdkClient {
  connect(t: unknown, o?: { timeout?: number }): Promise<void>;
  listTools(p?: { cursor?: string }): Promise<{ tools: { name: string }[]; nextCursor?: string }>;
  callTool(
    p: { name: string; arguments?: Record<string, unknown> },
    o?: { onprogress?: (p: { progress: number; total?: number }) => void; timeout?: number; resetTimeoutOnProgress?: boolean },
  ): Promise<{ content?: { text?: string }[]; isError?: boolean }>;
  close(): Promise<void>;
}

export async function sdkClient(url: string, mode: 'auto' | 'legacy' = 'auto', name = 'switchboard-e2e'): Promise<SdkClient> {
  const nodeDir = process.env.SWITCHBOARD_NODE_DIR ?? path.join(REPO, '.cache', 'node');
  const pkgDir = path.join(nodeDir, 'node_modules', '@modelcontextprotocol', 'client');
  const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { exports: { '.': { import: { default: string } } } };
  const mod = (await import(pathToFileURL(path.join(pkgDir, pkg.exports['.'].import.default)).href)) as {
    Client: new (info: { name: string; version: string }, opts: unknown) => SdkClient;
    StreamableHTTPClientTransport: new (u: URL) => unknown;
  };
  const client = new mod.Client({ name, version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new mod.StreamableHTTPClientTransport(new URL(url)), { timeout: 30_000 });
  return client;
}

/** Every tool name the router lists (following cursors). */
export async function allTools(c: SdkClient): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await c.listTools(cursor ? { cursor } : undefined);
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}
