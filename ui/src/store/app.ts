/**
 * Everything the views show except frames (those live in store/frames.ts): the snapshot the
 * event stream opens with, folded with every event after it. Lists fed from outside are
 * bounded. One `set` per event batch, so a batch costs one render.
 */
import { create } from 'zustand';
import type {
  CatalogDiff,
  Event,
  HandshakeRecord,
  Overview,
  RunSummary,
  ServerView,
  Sessions,
  Snapshot,
  TraceRecord,
  UpstreamEvent,
} from '../api/types';
import { newestAtUs, pushFrame } from './frames';
import { MetricSeries } from '../lib/metrics';

const MAX_HANDSHAKES = 500;
const MAX_TRACES = 2_000;
const MAX_HISTORY = 200;
const MAX_CHANGES = 200;

export type ConnStatus = 'connecting' | 'open' | 'closed' | 'unauthorised';

export interface HealthEntry {
  at_ms: number;
  text: string;
  bad: boolean;
}

export interface NegotiationStep {
  server: string;
  leg: string;
  step: string;
  offered: string[];
  chosen: string | null;
  detail: string | null;
  at_ms: number;
}

export interface NodeProgress {
  status: string;
  elapsed_ms: number | null;
  message: string | null;
  progress: number | null;
  at_ms: number;
}

export interface CatalogChange {
  server: string;
  diff: CatalogDiff;
  at_ms: number;
}

export interface ProcStats {
  pid: number;
  rss_bytes: number;
  cpu_percent: number;
  at_ms: number;
}

interface AppState {
  conn: { status: ConnStatus; error: string | null; attempts: number; since_ms: number };
  /** Events the router dropped for this viewer (lagged), in total and the latest burst. */
  lost: { total: number; last: number; at_ms: number };
  snapshotAt: number | null;
  servers: Record<string, ServerView>;
  overview: Overview | null;
  handshakes: (HandshakeRecord & { server_name?: string })[];
  negotiations: NegotiationStep[];
  traces: TraceRecord[];
  runs: RunSummary[];
  sessions: Sessions | null;
  health: Record<string, HealthEntry[]>;
  procStats: Record<string, ProcStats>;
  catalogChanges: CatalogChange[];
  /** Bumped when a server's catalog changed, so an open catalog refetches. */
  catalogVersion: Record<string, number>;
  flow: Record<string, Record<string, NodeProgress>>;
  metricsVersion: number;
  /** Bumped by `flow_run` events: the run list is stale. */
  runsVersion: number;
  /** Bumped by `session` events: the session table is stale. */
  sessionsVersion: number;
}

export const metrics = new MetricSeries(120);

export const useApp = create<AppState>(() => ({
  conn: { status: 'connecting', error: null, attempts: 0, since_ms: Date.now() },
  lost: { total: 0, last: 0, at_ms: 0 },
  snapshotAt: null,
  servers: {},
  overview: null,
  handshakes: [],
  negotiations: [],
  traces: [],
  runs: [],
  sessions: null,
  health: {},
  procStats: {},
  catalogChanges: [],
  catalogVersion: {},
  flow: {},
  metricsVersion: 0,
  runsVersion: 0,
  sessionsVersion: 0,
}));

const cap = <T>(xs: T[], n: number) => (xs.length > n ? xs.slice(0, n) : xs);

function describeUpstream(e: UpstreamEvent): HealthEntry['text'] {
  switch (e.event) {
    case 'started':
      return `started${e.pid !== null ? ` (pid ${e.pid})` : ''}, generation ${e.generation}`;
    case 'exited':
      return `exited: ${e.status} after ${Math.round(e.uptime_ms / 1000)} s`;
    case 'restarting':
      return `restarting (attempt ${e.attempt}) in ${e.delay_ms} ms`;
    case 'gave_up':
      return `gave up: ${e.reason}`;
  }
}

/** Replaces the state with a snapshot (on every (re)connect). */
export function applySnapshot(s: Snapshot): void {
  // The snapshot's `runs` and `sessions` are `JsonValue` in admin.ts (the admin crate does not
  // depend on the diagnosis and sessions types); their shapes are RunSummary and SessionsView.
  const runs = (s.runs ?? []) as unknown as RunSummary[];
  const sessions = (s.sessions ?? null) as unknown as Sessions | null;
  const servers: Record<string, ServerView> = {};
  for (const v of s.servers ?? []) servers[v.name] = v;
  metrics.reset();
  for (const t of [...(s.traces ?? [])].reverse()) metrics.add(t);
  // A reconnect's snapshot repeats frames this page already holds: add only newer ones.
  const newest = newestAtUs();
  for (const f of s.frames ?? []) if (f.at_us > newest) pushFrame(f);
  useApp.setState((st) => ({
    snapshotAt: Date.now(),
    servers,
    overview: s.overview ?? null,
    handshakes: cap(s.handshakes ?? [], MAX_HANDSHAKES),
    traces: cap(s.traces ?? [], MAX_TRACES),
    runs,
    sessions,
    metricsVersion: st.metricsVersion + 1,
  }));
}

/** Folds one batch of events into the state (frames go to the ring). */
export function applyEvents(events: Event[]): void {
  const st = useApp.getState();
  let servers = st.servers;
  let handshakes: AppState['handshakes'] | null = null;
  let negotiations: NegotiationStep[] | null = null;
  let traces: TraceRecord[] | null = null;
  let health = st.health;
  let procStats = st.procStats;
  let catalogChanges = st.catalogChanges;
  let catalogVersion = st.catalogVersion;
  let flow = st.flow;
  let tracesChanged = false;
  let runsVersion = st.runsVersion;
  let sessionsVersion = st.sessionsVersion;

  const addHealth = (server: string, e: HealthEntry) => {
    if (health === st.health) health = { ...health };
    health[server] = cap([e, ...(health[server] ?? [])], MAX_HISTORY);
  };
  const patchServer = (name: string, patch: Partial<ServerView>) => {
    const cur = servers[name];
    if (!cur) return;
    if (servers === st.servers) servers = { ...servers };
    servers[name] = { ...cur, ...patch };
  };

  for (const ev of events) {
    switch (ev.type) {
      case 'frame':
        pushFrame(ev.frame);
        break;
      case 'trace':
        (traces ??= [...st.traces]).unshift(ev.record);
        metrics.add(ev.record);
        tracesChanged = true;
        break;
      case 'handshake':
        (handshakes ??= [...st.handshakes]).unshift({ ...ev.record, server_name: ev.server });
        break;
      case 'negotiation':
        (negotiations ??= [...st.negotiations]).unshift({ ...ev });
        break;
      case 'server_state':
        patchServer(ev.server, {
          state: ev.to as ServerView['state'],
          reason: ev.reason,
          since_ms: ev.at_ms,
        });
        addHealth(ev.server, {
          at_ms: ev.at_ms,
          text: `${ev.from} → ${ev.to}: ${ev.reason}`,
          bad: ev.to === 'unavailable' || ev.to === 'degraded',
        });
        break;
      case 'catalog':
        patchServer(ev.server, { quarantined: ev.quarantined, resources: ev.resources, prompts: ev.prompts });
        break;
      case 'catalog_changed':
        catalogChanges = cap([{ server: ev.server, diff: ev.diff, at_ms: ev.at_ms }, ...catalogChanges], MAX_CHANGES);
        catalogVersion = { ...catalogVersion, [ev.server]: (catalogVersion[ev.server] ?? 0) + 1 };
        break;
      case 'upstream': {
        const cur = servers[ev.server];
        if (cur && ev.event.event === 'started') {
          patchServer(ev.server, { status: { ...cur.status, pid: ev.event.pid } });
        }
        addHealth(ev.server, {
          at_ms: ev.at_ms,
          text: describeUpstream(ev.event),
          bad: ev.event.event !== 'started',
        });
        break;
      }
      case 'process_stats':
        procStats = {
          ...procStats,
          [ev.server ?? '(router)']: { pid: ev.pid, rss_bytes: ev.rss_bytes, cpu_percent: ev.cpu_percent, at_ms: ev.at_ms },
        };
        break;
      case 'flow_progress': {
        const run = { ...(flow[ev.run_id] ?? {}) };
        run[ev.node] = {
          status: ev.status,
          elapsed_ms: ev.elapsed_ms ?? run[ev.node]?.elapsed_ms ?? null,
          message: ev.message,
          progress: ev.progress,
          at_ms: ev.at_ms,
        };
        flow = { ...flow, [ev.run_id]: run };
        break;
      }
      case 'notification':
        break;
      case 'flow_run':
        // A run started or settled: the run list is stale.
        runsVersion += 1;
        break;
      case 'session':
        // A session opened, closed or bound an upstream: the sessions table is stale.
        sessionsVersion += 1;
        break;
    }
  }
  useApp.setState({
    servers,
    handshakes: handshakes ? cap(handshakes, MAX_HANDSHAKES) : st.handshakes,
    negotiations: negotiations ? cap(negotiations, MAX_HANDSHAKES) : st.negotiations,
    traces: traces ? cap(traces, MAX_TRACES) : st.traces,
    health,
    procStats,
    catalogChanges,
    catalogVersion,
    flow,
    runsVersion,
    sessionsVersion,
    metricsVersion: tracesChanged ? st.metricsVersion + 1 : st.metricsVersion,
  });
}

/** Notes events the router dropped for this viewer. */
export function applyLagged(lost: number, totalLost: number): void {
  useApp.setState((s) => ({ lost: { total: Math.max(totalLost, s.lost.total + lost), last: lost, at_ms: Date.now() } }));
}

/** Sets the connection state. */
export function setConn(status: ConnStatus, error: string | null = null): void {
  useApp.setState((s) => ({
    conn: {
      status,
      error,
      attempts: status === 'open' ? 0 : s.conn.attempts + (status === 'closed' ? 1 : 0),
      since_ms: Date.now(),
    },
  }));
}

/** Replaces one server's view (after a command answered with it). */
export function putServer(v: ServerView): void {
  useApp.setState((s) => ({ servers: { ...s.servers, [v.name]: v } }));
}

/** Replaces the server list (after a refetch). */
export function setServers(list: ServerView[]): void {
  const servers: Record<string, ServerView> = {};
  for (const v of list) servers[v.name] = v;
  useApp.setState({ servers });
}

export function setRuns(runs: RunSummary[]): void {
  useApp.setState({ runs });
}

export function setSessions(sessions: Sessions): void {
  useApp.setState({ sessions });
}

export function setOverview(overview: Overview): void {
  useApp.setState({ overview });
}
