import { describe, expect, it } from 'vitest';
import { matchFrame, parseFilter, tokenize } from './filter';
import type { FrameEvent } from '../generated/events';

function frame(over: Partial<FrameEvent> = {}): FrameEvent {
  return {
    leg: 'upstream',
    peer: 'everything',
    transport: 'stdio',
    direction: 'out',
    size: 40,
    kind: 'request',
    method: 'tools/call',
    id: 1,
    correlation: 7,
    sse_id: null,
    ws_frame: null,
    at_us: 1,
    body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}',
    ...over,
  };
}

describe('tokenize', () => {
  it('keeps quoted words together', () => {
    expect(tokenize('server:a "hello world"  -kind:error')).toEqual(['server:a', 'hello world', '-kind:error']);
  });
});

describe('parseFilter', () => {
  it('reads every key', () => {
    const f = parseFilter('server:Everything method:tools/call dir:in leg:down kind:error text:Echo plain');
    expect(f.errors).toEqual([]);
    expect(f.terms).toEqual([
      { key: 'server', value: 'everything', negate: false },
      { key: 'method', value: 'tools/call', negate: false },
      { key: 'dir', value: 'in', negate: false },
      { key: 'leg', value: 'downstream', negate: false },
      { key: 'kind', value: 'error', negate: false },
      { key: 'text', value: 'echo', negate: false },
      { key: 'text', value: 'plain', negate: false },
    ]);
  });

  it('reads negation', () => {
    expect(parseFilter('-method:ping -noise').terms).toEqual([
      { key: 'method', value: 'ping', negate: true },
      { key: 'text', value: 'noise', negate: true },
    ]);
  });

  it('names what it cannot understand and keeps the rest', () => {
    const f = parseFilter('dir:sideways colour:red leg:upstream kind:');
    expect(f.terms).toEqual([{ key: 'leg', value: 'upstream', negate: false }]);
    expect(f.errors).toEqual([
      'dir: must be in or out, not "sideways"',
      'unknown filter key "colour" (use server, method, dir, leg, kind, text)',
      '"kind:" needs a value',
    ]);
  });

  it('treats a lone dash and URLs as text', () => {
    expect(parseFilter('- http://x').terms.map((t) => t.key)).toEqual(['text', 'text']);
  });
});

describe('matchFrame', () => {
  it('passes everything with an empty filter', () => {
    expect(matchFrame(parseFilter(''), frame())).toBe(true);
  });

  it('requires every term', () => {
    const f = parseFilter('server:everything dir:out');
    expect(matchFrame(f, frame())).toBe(true);
    expect(matchFrame(f, frame({ direction: 'in' }))).toBe(false);
    expect(matchFrame(f, frame({ peer: 'fixture' }))).toBe(false);
  });

  it('matches methods exactly or by prefix', () => {
    expect(matchFrame(parseFilter('method:tools/'), frame())).toBe(true);
    expect(matchFrame(parseFilter('method:tools/*'), frame())).toBe(true);
    expect(matchFrame(parseFilter('method:tools'), frame())).toBe(false);
    expect(matchFrame(parseFilter('method:tools/call'), frame({ method: null }))).toBe(false);
  });

  it('negates', () => {
    expect(matchFrame(parseFilter('-kind:request'), frame())).toBe(false);
    expect(matchFrame(parseFilter('-kind:error'), frame())).toBe(true);
  });

  it('finds text in the body, case-insensitively', () => {
    expect(matchFrame(parseFilter('ECHO'), frame())).toBe(true);
    expect(matchFrame(parseFilter('"name":"echo"'), frame())).toBe(true);
    expect(matchFrame(parseFilter('nothere'), frame())).toBe(false);
  });
});
