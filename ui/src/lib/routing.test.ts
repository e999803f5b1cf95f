import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Decision, SessionView } from '../api/types';
import { decisionFlags, shortReason, filterDecisions, fingerprint, keyLabels, mergeDecisions, sessionFingerprint, successPct } from './routing';

const dec = (id: string, at_ms: number, o: Partial<Decision> = {}): Decision => ({
  id,
  at_ms,
  target: 'tool "read"',
  group: 'chaos',
  key: null,
  key_source: 'none',
  candidates: [],
  chosen: 'chaos-1',
  layer: 'score',
  reason: 'lowest load score',
  degraded: false,
  dropped: [],
  attempt: 0,
  excluded: [],
  ...o,
});

const session = (tag: string, name: string | null): SessionView =>
  ({ tag, client_info: name ? { name, version: '1' } : null }) as unknown as SessionView;

describe('routing: fingerprints', () => {
  it('turns a session tag into the fingerprint of the same session id', async () => {
    const sid = 'a-sealed-session-id-0123';
    const hex = createHash('sha256').update(sid).digest('hex').slice(0, 12);
    // What the gateway shows (s-…) and what the scheduler records (k:…) for that id.
    expect(sessionFingerprint(`s-${hex}`)).toBe(`k:${hex}`);
    expect(await fingerprint(sid)).toBe(`k:${hex}`);
    expect(sessionFingerprint('u-0123456789ab')).toBeNull();
    expect(sessionFingerprint('s-short')).toBeNull();
  });

  it('labels a fingerprint with the session’s client', () => {
    const m = keyLabels([session('s-0123456789ab', 'session-client'), session('s-ba9876543210', null)]);
    expect(m.get('k:0123456789ab')).toBe('session-client (s-0123456789ab)');
    expect(m.get('k:ba9876543210')).toBe('s-ba9876543210');
    expect(m.size).toBe(2);
  });
});

describe('routing: decisions', () => {
  const ds = [
    dec('3', 30, { key: 'k:aaaaaaaaaaaa', group: 'chaos' }),
    dec('2', 20, { key: 'k:bbbbbbbbbbbb', group: 'chaos' }),
    dec('1', 10, { key: 'k:aaaaaaaaaaaa', group: 'fixture' }),
  ];

  it('filters by key, by group, by both, or not at all', () => {
    expect(filterDecisions(ds, {}).map((d) => d.id)).toEqual(['3', '2', '1']);
    expect(filterDecisions(ds, { key: 'k:aaaaaaaaaaaa' }).map((d) => d.id)).toEqual(['3', '1']);
    expect(filterDecisions(ds, { group: 'chaos' }).map((d) => d.id)).toEqual(['3', '2']);
    expect(filterDecisions(ds, { key: 'k:aaaaaaaaaaaa', group: 'chaos' }).map((d) => d.id)).toEqual(['3']);
    expect(filterDecisions(ds, { key: 'k:cccccccccccc' })).toEqual([]);
  });

  it('puts live decisions on top, ignores repeats and stays bounded', () => {
    let list = mergeDecisions([], ds);
    expect(list.map((d) => d.id)).toEqual(['3', '2', '1']);
    list = mergeDecisions(list, [dec('4', 40), dec('3', 30), dec('5', 50)]);
    expect(list.map((d) => d.id)).toEqual(['5', '4', '3', '2', '1']);
    const many = Array.from({ length: 700 }, (_, i) => dec(`m${i}`, 100 + i));
    list = mergeDecisions(list, many, 500);
    expect(list).toHaveLength(500);
    expect(list[0]?.id).toBe('m699');
    expect(list[499]?.id).toBe('m200');
    expect(mergeDecisions(list, [])).toBe(list);
  });

  it('computes success rates and flags', () => {
    expect(successPct({ ok: 18, failed: 2 })).toBe(90);
    expect(successPct({ ok: 0, failed: 0 })).toBeNull();
    expect(decisionFlags({ degraded: true, attempt: 2 })).toEqual(['degraded', 'retry 2']);
    expect(decisionFlags({ degraded: false, attempt: 0 })).toEqual([]);
  });

  it('shortens a reason for its cell', () => {
    const key = 'k:149c28e4323d';
    expect(shortReason({ layer: 'affinity', key, reason: `affinity: key ${key} stays on chaos-1 (bound 3 s ago)` })).toBe('stays on chaos-1 (bound 3 s ago)');
    expect(shortReason({ layer: 'score', key, reason: `new key ${key}: lowest load score 0.0 is chaos-1` })).toBe('new key: lowest load score 0.0 is chaos-1');
    expect(shortReason({ layer: 'only', key: null, reason: 'the group has one member' })).toBe('the group has one member');
  });
});
