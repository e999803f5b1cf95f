import { beforeEach, describe, expect, it } from 'vitest';
import { backoff, eventsUrl, handleMessage, MAX_BACKOFF_MS } from './events';
import { useApp } from '../store/app';
import { useFrames, ring } from '../store/frames';

describe('events stream', () => {
  beforeEach(() => {
    useApp.setState({ lost: { total: 0, last: 0, at_ms: 0 } });
  });

  it('backs off exponentially up to a cap', () => {
    expect(backoff(0)).toBe(250);
    expect(backoff(1)).toBe(500);
    expect(backoff(3)).toBe(2_000);
    expect(backoff(30)).toBe(MAX_BACKOFF_MS);
  });

  it('builds the ws URL from the page origin', () => {
    expect(eventsUrl('http://127.0.0.1:7010')).toBe('ws://127.0.0.1:7010/api/events');
    expect(eventsUrl('https://x.test')).toBe('wss://x.test/api/events');
  });

  it('counts lagged events for the operator', () => {
    handleMessage(JSON.stringify({ type: 'lagged', lost: 12, total_lost: 12 }));
    handleMessage(JSON.stringify({ type: 'lagged', lost: 3, total_lost: 15 }));
    expect(useApp.getState().lost.total).toBe(15);
    expect(useApp.getState().lost.last).toBe(3);
  });

  it('folds a snapshot, then a batch of events', () => {
    handleMessage(
      JSON.stringify({
        type: 'snapshot',
        servers: [{ name: 'everything', state: 'pending', reason: 'connecting', status: {} }],
        handshakes: [],
        traces: [],
        frames: [],
        runs: [],
        sessions: { sessions: [], callers: [], scheduling: null },
        overview: null,
      }),
    );
    expect(useApp.getState().servers.everything?.state).toBe('pending');
    const before = ring.total;
    handleMessage(
      JSON.stringify({
        type: 'events',
        events: [
          { type: 'server_state', server_id: 'x', server: 'everything', from: 'pending', to: 'ready', reason: 'handshaken', at_ms: 1 },
          {
            type: 'frame',
            frame: { leg: 'upstream', peer: 'everything', transport: 'stdio', direction: 'out', size: 2, kind: 'request', method: 'ping', id: 1, correlation: null, sse_id: null, ws_frame: null, at_us: 10, body: '{}' },
          },
          {
            type: 'frame',
            frame: { leg: 'upstream', peer: 'everything', transport: 'stdio', direction: 'in', size: 2, kind: 'response', method: null, id: 1, correlation: null, sse_id: null, ws_frame: null, at_us: 2_010, body: '{}' },
          },
        ],
      }),
    );
    expect(useApp.getState().servers.everything?.state).toBe('ready');
    expect(useApp.getState().health.everything?.[0]?.text).toContain('pending → ready');
    expect(ring.total - before).toBe(2);
    const resp = ring.at(ring.length - 1);
    expect(resp?.latencyUs).toBe(2_000);
    expect(useFrames.getState()).toBeDefined();
  });

  it('ignores a message that is not JSON', () => {
    expect(() => handleMessage('not json')).not.toThrow();
  });
});

describe('events stream: subscribers', () => {
  it('hands a kind’s events to its subscribers only', async () => {
    const { subscribe } = await import('./events');
    const got: string[] = [];
    const off = subscribe('route', (evs) => {
      for (const e of evs) if (e.type === 'route') got.push(e.decision.id);
    });
    const decision = { id: 'r-1', at_ms: 1, target: 'tool "read"', group: 'chaos', key: null, key_source: 'none', candidates: [], chosen: 'chaos-1', layer: 'only', reason: 'x', degraded: false, dropped: [], attempt: 0, excluded: [] };
    handleMessage(JSON.stringify({ type: 'events', events: [{ type: 'route', decision }, { type: 'session', at_ms: 1 }] }));
    off();
    handleMessage(JSON.stringify({ type: 'events', events: [{ type: 'route', decision: { ...decision, id: 'r-2' } }] }));
    expect(got).toEqual(['r-1']);
  });
});
