/**
 * The admin API client: every request carries `Authorization: Bearer <token>`; error bodies
 * (`{"error": "..."}`) become `ApiError`s whose message is the server's sentence.
 */
import type {
  AddServer,
  BlobUploaded,
  CatalogView,
  Decision,
  DecisionQuery,
  GroupView,
  FlowGraph,
  HandshakeRecord,
  ImportResult,
  Overview,
  RunView,
  RunSummary,
  ServerView,
  Sessions,
  RunRequest,
  ThermalView,
  TraceRecord,
} from './types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let token: string | null = null;
let base = '';

/** Sets the token (and, for tests or a dev server, the router's origin). */
export function configure(t: string | null, origin = ''): void {
  token = t;
  base = origin;
}

/** The token in use (for the WebSocket subprotocol). */
export function currentToken(): string | null {
  return token;
}

/** The router's origin ('' = this page's). */
export function apiBase(): string {
  return base;
}

async function request<T>(method: string, path: string, body?: BodyInit, type?: string): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (type) headers['Content-Type'] = type;
  const res = await fetch(base + path, { method, headers, body });
  if (!res.ok) {
    let msg = `${method} ${path}: HTTP ${res.status}`;
    try {
      const j = (await res.json()) as { error?: string };
      if (j.error) msg = j.error;
    } catch {
      // not JSON: keep the status line
    }
    if (res.status === 401) msg = `${msg} — open the panel with the URL switchboard serve printed (it carries the token)`;
    throw new ApiError(res.status, msg);
  }
  if (res.status === 204 || res.status === 202) {
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }
  const ct = res.headers.get('content-type') ?? '';
  if (ct.includes('json') && !ct.includes('ndjson')) return (await res.json()) as T;
  return (await res.text()) as T;
}

const json = (v: unknown) => JSON.stringify(v);
const enc = encodeURIComponent;
const qs = (o: Record<string, string | number | undefined>) => {
  const p = Object.entries(o).filter(([, v]) => v !== undefined && v !== '');
  return p.length ? '?' + p.map(([k, v]) => `${k}=${enc(String(v))}`).join('&') : '';
};

export const api = {
  overview: () => request<Overview>('GET', '/api/overview'),
  servers: () => request<ServerView[]>('GET', '/api/servers'),
  addServer: (s: AddServer) => request<ServerView>('POST', '/api/servers', json(s), 'application/json'),
  removeServer: (name: string) => request<void>('DELETE', `/api/servers/${enc(name)}`),
  restartServer: (name: string) => request<void>('POST', `/api/servers/${enc(name)}/restart`),
  importMcpJson: (text: string) => request<ImportResult>('POST', '/api/servers/import', text, 'application/json'),
  catalog: (name: string) => request<CatalogView>('GET', `/api/servers/${enc(name)}/catalog`),
  handshakes: (o: { server?: string; leg?: string; limit?: number } = {}) =>
    request<HandshakeRecord[]>('GET', '/api/handshakes' + qs(o)),
  traces: (limit = 500) => request<TraceRecord[]>('GET', '/api/traces' + qs({ limit })),
  sessions: () => request<Sessions>('GET', '/api/sessions'),
  decisions: (q: DecisionQuery = {}) => request<Decision[]>('GET', '/api/decisions' + qs(q)),
  decision: (id: string) => request<Decision>('GET', `/api/decisions/${enc(id)}`),
  groups: (all = false) => request<GroupView[]>('GET', '/api/groups' + qs({ all: all ? 'true' : undefined })),
  exportFrames: (o: { leg?: string; server?: string } = {}) =>
    request<string>('GET', '/api/frames/export' + qs(o)),
  uploadBlob: (file: Blob) => request<BlobUploaded>('POST', '/api/blobs', file, 'application/octet-stream'),
  thermal: (sha: string) => request<ThermalView>('GET', `/api/blobs/${enc(sha)}/thermal`),
  flow: () => request<FlowGraph>('GET', '/api/flow'),
  runs: (limit = 50) => request<RunSummary[]>('GET', '/api/runs' + qs({ limit })),
  startRun: (r: RunRequest) => request<{ run_id: string }>('POST', '/api/runs', json(r), 'application/json'),
  run: (id: string) => request<RunView>('GET', `/api/runs/${enc(id)}`),
  cancelRun: (id: string) => request<void>('POST', `/api/runs/${enc(id)}/cancel`),
  settings: () => request<unknown>('GET', '/api/settings'),
};
