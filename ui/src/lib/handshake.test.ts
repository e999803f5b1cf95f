import { describe, expect, it } from 'vitest';
import { capabilityDiff, handshakeFrames, sequence } from './handshake';
import type { FrameEvent, HandshakeRecord } from '../api/types';

const rec = (over: Partial<HandshakeRecord> = {}): HandshakeRecord => ({
  id: 1,
  server_id: 's1',
  leg: 'upstream',
  transport: 'stdio',
  era: 'legacy',
  offered_versions: ['2025-11-25'],
  chosen_version: '2025-11-25',
  client_capabilities: { roots: {}, sampling: {} },
  server_capabilities: { tools: { listChanged: true }, logging: {} },
  client_info: { name: 'switchboard' },
  server_info: { name: 'everything' },
  tool_count: 12,
  duration_ms: 40,
  error: null,
  at_ms: 10_000,
  ...over,
});

const fr = (over: Partial<FrameEvent>): FrameEvent => ({
  leg: 'upstream', peer: 'everything', transport: 'stdio', direction: 'out', size: 1, kind: 'request',
  method: 'initialize', id: 0, correlation: null, sse_id: null, ws_frame: null, at_us: 9_970_000, body: '{}', ...over,
});

describe('handshake', () => {
  it('lists both sides of the capabilities', () => {
    expect(capabilityDiff(rec())).toEqual([
      { key: 'logging', requested: false, granted: true },
      { key: 'roots', requested: true, granted: false },
      { key: 'sampling', requested: true, granted: false },
      { key: 'tools', requested: false, granted: true },
    ]);
  });

  it('draws a legacy handshake from the record when there are no frames', () => {
    const s = sequence(rec(), []);
    expect(s.map((m) => m.label)).toEqual(['initialize', 'result', 'notifications/initialized', '12 tools listed']);
    expect(s[0]).toMatchObject({ from: 1, to: 2, note: 'offers 2025-11-25' });
    expect(s[1]).toMatchObject({ from: 2, to: 1, note: 'version 2025-11-25' });
  });

  it('shows the failure reason', () => {
    const s = sequence(rec({ error: 'version mismatch', chosen_version: null }), []);
    expect(s.at(-1)).toMatchObject({ kind: 'fail', note: 'version mismatch' });
  });

  it('uses the handshake frames of the server around the record', () => {
    const frames = [
      fr({ body: '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}' }),
      fr({ direction: 'in', kind: 'response', method: null, at_us: 9_990_000, body: '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}' }),
      fr({ method: 'tools/call', correlation: 3 }),
      fr({ peer: 'other' }),
      fr({ at_us: 1_000 }),
    ];
    const picked = handshakeFrames(frames, 'everything', rec());
    expect(picked).toHaveLength(2);
    const s = sequence(rec(), picked);
    expect(s[0]).toMatchObject({ label: 'initialize', note: 'offers 2025-11-25', from: 1, to: 2 });
    expect(s[1]).toMatchObject({ label: 'result #0', note: 'version 2025-11-25', from: 2, to: 1, kind: 'resp' });
  });

  it('draws a downstream handshake between client and router', () => {
    const s = sequence(rec({ leg: 'downstream', era: '2026-07-28', server_id: null }), []);
    expect(s[0]).toMatchObject({ from: 0, to: 1, label: 'server/discover' });
  });
});
