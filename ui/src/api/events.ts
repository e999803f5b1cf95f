/**
 * The live event stream (`/api/events`): the token rides as a subprotocol
 * (`switchboard.events`, `bearer.<token>`), because browsers cannot set headers on a WebSocket.
 * The first message is a snapshot; then batches of events and, when this viewer fell behind,
 * `lagged` counts (shown to the operator). A dropped connection is retried with backoff
 * (250 ms doubling to 10 s, reset once a connection opens).
 */
import type { Event, ViewerMessage } from './types';
import { apiBase, currentToken } from './client';
import { applyEvents, applyLagged, applySnapshot, setConn } from '../store/app';


export const MIN_BACKOFF_MS = 250;
export const MAX_BACKOFF_MS = 10_000;

/** The delay before reconnect attempt `n` (0-based). */
export function backoff(n: number): number {
  return Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** Math.min(n, 10));
}

/** The WebSocket URL for `/api/events` relative to the router's origin. */
export function eventsUrl(origin: string, loc: Location = location): string {
  const u = new URL('/api/events', origin || loc.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.toString();
}

type Listener = (events: Event[]) => void;
const listeners = new Map<string, Set<Listener>>();

/**
 * Hands every batch's events of `kind` (e.g. `route`) to `fn`, after the store folded them;
 * returns the unsubscribe function. The socket's filter stays as it is: other views still get
 * everything they need.
 */
export function subscribe(kind: Event['type'], fn: Listener): () => void {
  let set = listeners.get(kind);
  if (!set) listeners.set(kind, (set = new Set()));
  set.add(fn);
  return () => {
    set.delete(fn);
  };
}

function dispatch(events: Event[]): void {
  if (listeners.size === 0) return;
  const byKind = new Map<string, Event[]>();
  for (const e of events) {
    if (!listeners.get(e.type)?.size) continue;
    let xs = byKind.get(e.type);
    if (!xs) byKind.set(e.type, (xs = []));
    xs.push(e);
  }
  for (const [kind, xs] of byKind) for (const fn of listeners.get(kind) ?? []) fn(xs);
}

let socket: WebSocket | null = null;
let attempt = 0;
let timer: ReturnType<typeof setTimeout> | null = null;
let stopped = false;

/** Dispatches one message from the router. Exported for tests. */
export function handleMessage(text: string): void {
  let msg: ViewerMessage;
  try {
    msg = JSON.parse(text) as ViewerMessage;
  } catch {
    return;
  }
  switch (msg.type) {
    case 'snapshot':
      applySnapshot(msg);
      break;
    case 'events':
      applyEvents(msg.events);
      dispatch(msg.events);
      break;
    case 'lagged':
      applyLagged(msg.lost, msg.total_lost);
      break;
    case 'error':
      setConn('closed', msg.error);
      break;
    case 'filtered':
      break;
  }
}

/** Opens the stream and keeps it open until `disconnect()`. */
export function connect(): void {
  stopped = false;
  const token = currentToken();
  const protocols = ['switchboard.events', ...(token ? ['bearer.' + token] : [])];
  setConn('connecting');
  let ws: WebSocket;
  try {
    ws = new WebSocket(eventsUrl(apiBase()), protocols);
  } catch (e) {
    setConn('closed', String(e));
    schedule();
    return;
  }
  socket = ws;
  let opened = false;
  ws.onopen = () => {
    opened = true;
    attempt = 0;
    setConn('open');
  };
  ws.onmessage = (m) => {
    if (typeof m.data === 'string') handleMessage(m.data);
  };
  ws.onclose = (c) => {
    if (socket !== ws) return;
    socket = null;
    if (stopped) return;
    const why = c.reason || (opened ? `closed (code ${c.code})` : 'cannot reach the router');
    setConn(!token ? 'unauthorised' : 'closed', !token ? 'no token: open the URL switchboard serve printed' : why);
    schedule();
  };
}

function schedule(): void {
  if (stopped || timer) return;
  const delay = backoff(attempt++);
  timer = setTimeout(() => {
    timer = null;
    connect();
  }, delay);
}

/** Sends a server-side filter (`{"type":"filter",...}`); empty lists mean "any". */
export function sendFilter(f: { kinds?: string[]; servers?: string[]; methods?: string[] }): void {
  socket?.send(JSON.stringify({ type: 'filter', kinds: f.kinds ?? [], servers: f.servers ?? [], methods: f.methods ?? [] }));
}

/** Closes the stream for good. */
export function disconnect(): void {
  stopped = true;
  if (timer) clearTimeout(timer);
  timer = null;
  socket?.close();
  socket = null;
}
