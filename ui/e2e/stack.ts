/**
 * The stack the e2e tests run against: `switchboard serve` on 127.0.0.1:0 with its own store
 * in a temp dir, the built-in servers, server-everything over stdio and `mcp-fixture` (with a
 * `$ref`-broken tool) over HTTP, and three `switchboard-chaos` replicas (`chaos-1..3`, one
 * detected replica group "chaos") over HTTP. Global setup starts it and writes its addresses to
 * e2e/.state/stack.json; the specs read them from there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const UI_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const REPO = path.resolve(UI_DIR, '..');
export const STATE_FILE = path.join(UI_DIR, 'e2e', '.state', 'stack.json');
/** The router's probe (catalog refresh) interval in the e2e config, seconds. */
export const PROBE_SECS = 3;
export const SHOTS = path.join(UI_DIR, 'e2e', 'screenshots');
/** The thermal samples: the repo reaches shared/ as ../shared from its root. */
export const THERMAL_DIR = process.env.SWITCHBOARD_THERMAL_DIR ?? path.resolve(REPO, '..', 'shared', 'data', 'thermal');

export interface Stack {
  /** The panel URL `serve` printed, with `#token=…`. */
  panel: string;
  /** The router's origin, e.g. http://127.0.0.1:40123. */
  origin: string;
  token: string;
  mcp: string;
  fixtureUrl: string;
  /** The chaos replicas: server name and MCP URL (the control API is on the same listener). */
  chaos: { name: string; url: string }[];
  pids: { router: number; fixture: number; chaos: number[]; preview?: number };
  work: string;
}

export function readStack(): Stack {
  return JSON.parse(readFileSync(STATE_FILE, 'utf8')) as Stack;
}

function bin(name: string, env: string): string {
  const p = process.env[env] ?? path.join(REPO, 'target', 'debug', name);
  if (!existsSync(p)) throw new Error(`${name} not found at ${p}: run cargo build (or set ${env})`);
  return p;
}

/** The chaos replicas' server names (identical replicas: one detected group, "chaos"). */
export const CHAOS = ['chaos-1', 'chaos-2', 'chaos-3'];

/** Waits until `pattern` matches a line the child prints on `stream`; resolves with the match. */
function waitLine(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp, what: string, ms = 90_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${what}: no line matching ${pattern} within ${ms} ms; output:\n${seen.slice(-4000)}`)), ms);
    const onData = (d: Buffer) => {
      buf += d.toString();
      seen += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = pattern.exec(line);
        if (m) {
          clearTimeout(timer);
          child[stream]?.off('data', onData);
          resolve(m);
          return;
        }
      }
    };
    child[stream]?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before printing ${pattern}; output:\n${seen.slice(-4000)}`));
    });
  });
}

export async function startStack(): Promise<Stack> {
  const switchboard = bin('switchboard', 'SWITCHBOARD_BIN');
  const fixtureBin = process.env.SWITCHBOARD_FIXTURE_BIN ?? path.join(path.dirname(switchboard), 'mcp-fixture');
  if (!existsSync(fixtureBin)) throw new Error(`mcp-fixture not found at ${fixtureBin}: cargo build -p switchboard-fixtures (or set SWITCHBOARD_FIXTURE_BIN)`);
  const nodeDir = process.env.SWITCHBOARD_NODE_DIR ?? path.join(REPO, '.cache', 'node');
  const node = path.join(nodeDir, 'node_modules', '.bin', 'node');
  const everything = path.join(nodeDir, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  for (const f of [node, everything]) if (!existsSync(f)) throw new Error(`missing ${f}: run scripts/setup.sh test`);

  const work = mkdtempSync(path.join(tmpdir(), 'sb-ui-e2e-'));
  mkdirSync(path.dirname(STATE_FILE), { recursive: true });

  const fixture = spawn(fixtureBin, ['--transport', 'http', '--profile', 'broken-ref'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const fx = await waitLine(fixture, 'stdout', /^listening on (\S+)/, 'mcp-fixture');
  const fixtureUrl = fx[1] as string;

  const chaosBin = process.env.SWITCHBOARD_CHAOS_BIN ?? path.join(path.dirname(switchboard), 'switchboard-chaos');
  if (!existsSync(chaosBin)) throw new Error(`switchboard-chaos not found at ${chaosBin}: cargo build -p switchboard-chaos (or set SWITCHBOARD_CHAOS_BIN)`);
  const chaos: { name: string; url: string; child: ChildProcess }[] = [];
  for (const name of CHAOS) {
    const child = spawn(chaosBin, ['--listen', '127.0.0.1:0', '--replica-id', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    const m = await waitLine(child, 'stdout', /^listening (\S+)/, name);
    chaos.push({ name, url: m[1] as string, child });
  }

  // The embedded default's built-ins (vision, knowledge, reasoning) plus the two real upstreams.
  const config = `
[router]
stats_interval_secs = 1
refresh_interval_secs = ${PROBE_SECS}
# Domain labels the servers below carry besides the built-in ones (an unknown one is refused).
labels = ["demo", "fixture", "chaos"]

[endpoint]
prefix = "always"

[servers.vision]
builtin = "vision"
labels = ["vision", "thermal-analysis"]

[servers.knowledge]
builtin = "knowledge"
labels = ["rag", "knowledge"]

[servers.reasoning]
builtin = "reasoning"
labels = ["reasoning"]

[servers.everything]
command = ${JSON.stringify(node)}
args = [${JSON.stringify(everything)}, "stdio"]
labels = ["demo"]

[servers.fixture]
url = ${JSON.stringify(fixtureUrl)}
labels = ["fixture"]
${chaos.map((c) => `
[servers.${c.name}]
url = ${JSON.stringify(c.url)}
labels = ["chaos"]
`).join('')}`;
  const configPath = path.join(work, 'switchboard.toml');
  writeFileSync(configPath, config);
  const router = spawn(switchboard, ['--config', configPath, '--db', path.join(work, 'switchboard.db'), 'serve', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' },
  });
  // Keep reading stdout so the pipe never fills.
  router.stdout?.on('data', () => undefined);
  const m = await waitLine(router, 'stderr', /panel:\s*(\S+#token=\S+)/, 'switchboard serve');
  const panel = m[1] as string;
  const u = new URL(panel);
  const token = decodeURIComponent(/token=([^&]+)/.exec(u.hash)?.[1] ?? '');
  router.stderr?.on('data', () => undefined);
  fixture.stdout?.on('data', () => undefined);
  fixture.stderr?.on('data', () => undefined);
  fixture.unref();
  for (const c of chaos) {
    c.child.stdout?.on('data', () => undefined);
    c.child.stderr?.on('data', () => undefined);
    c.child.unref();
  }
  router.unref();
  // SWITCHBOARD_E2E_PREVIEW=1: serve this worktree's ui/dist with `vite preview`, proxying
  // /api to the router — for a binary built without the UI, or a UI changed since it was built.
  let page = panel;
  let previewPid: number | undefined;
  if (process.env.SWITCHBOARD_E2E_PREVIEW === '1') {
    const vite = path.join(UI_DIR, 'node_modules', '.bin', 'vite');
    const port = Number(process.env.SWITCHBOARD_E2E_PREVIEW_PORT ?? 4173);
    const preview = spawn(vite, ['preview', '--strictPort', '--host', '127.0.0.1', '--port', String(port)], {
      cwd: UI_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SWITCHBOARD_URL: u.origin },
    });
    await waitLine(preview, 'stdout', /Local:/, 'vite preview', 30_000);
    preview.stdout?.on('data', () => undefined);
    preview.stderr?.on('data', () => undefined);
    preview.unref();
    previewPid = preview.pid;
    page = `http://127.0.0.1:${port}/${u.hash}`;
  }
  const stack: Stack = {
    panel: page,
    origin: u.origin,
    token,
    mcp: `${u.origin}/mcp`,
    fixtureUrl,
    chaos: chaos.map((c) => ({ name: c.name, url: c.url })),
    pids: { router: router.pid ?? 0, fixture: fixture.pid ?? 0, chaos: chaos.map((c) => c.child.pid ?? 0), preview: previewPid },
    work,
  };
  writeFileSync(STATE_FILE, JSON.stringify(stack, null, 2));
  return stack;
}

export function stopStack(): void {
  if (!existsSync(STATE_FILE)) return;
  const s = readStack();
  for (const pid of [s.pids.router, s.pids.fixture, ...(s.pids.chaos ?? []), s.pids.preview ?? 0]) {
    try {
      if (pid) process.kill(pid, 'SIGTERM');
    } catch {
      // already gone (a test may have killed the fixture on purpose)
    }
  }
}
