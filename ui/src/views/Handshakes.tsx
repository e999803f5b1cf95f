/**
 * Handshakes: every connection's handshake (both legs), newest first; the selected one as a
 * sequence diagram with versions offered and chosen, the capability diff, duration and the
 * failure reason. Re-handshakes (expiry, list_changed, restart) show as further rows of the
 * same peer.
 */
import { useEffect, useMemo, useState } from 'react';
import { Group, Panel, Separator } from 'react-resizable-panels';
import { useApp } from '../store/app';
import { api } from '../api/client';
import { ring } from '../store/frames';
import { capabilityDiff, handshakeFrames, hsPeer, sequence, type Hs } from '../lib/handshake';
import { useListNav } from '../lib/useListNav';
import { clock, duration } from '../lib/format';
import { Sequence } from '../components/Sequence';
import type { FrameEvent } from '../api/types';

export function Handshakes() {
  const live = useApp((s) => s.handshakes);
  const servers = useApp((s) => s.servers);
  const negotiations = useApp((s) => s.negotiations);
  const [older, setOlder] = useState<Hs[]>([]);
  const [legFilter, setLegFilter] = useState<'all' | 'upstream' | 'downstream'>('all');
  const [sel, setSel] = useState(0);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    api.handshakes({ limit: 200 }).then(setOlder, () => undefined);
    const t = setInterval(() => setTick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, []);

  const all = useMemo(() => {
    const seen = new Set<string>();
    const out: Hs[] = [];
    for (const h of [...live, ...older]) {
      const k = h.id !== null ? `id${h.id}` : `${h.leg}${h.server_id}${h.at_ms}`;
      if (seen.has(k)) continue;
      seen.add(k);
      out.push(h);
    }
    out.sort((a, b) => b.at_ms - a.at_ms);
    return legFilter === 'all' ? out : out.filter((h) => h.leg === legFilter);
  }, [live, older, legFilter]);

  useListNav(all.length, sel, setSel);
  const h = all[Math.min(sel, all.length - 1)];
  const peer = h ? hsPeer(h, servers) : '';

  const frames = useMemo<FrameEvent[]>(() => {
    if (!h || h.leg !== 'upstream') return [];
    return handshakeFrames(ring.toArray().map((r) => r.f), peer, h);
    // re-read the ring once a second while a handshake is open
  }, [h, peer, tick]); // eslint-disable-line react-hooks/exhaustive-deps

  const steps = h ? negotiations.filter((n) => n.server === peer && n.leg === h.leg && Math.abs(n.at_ms - h.at_ms) < 10_000) : [];
  const msgs = h ? sequence(h, frames) : [];
  const names: [string, string, string] =
    h?.leg === 'downstream' ? [peer, 'router', '—'] : ['client', 'router', peer || 'upstream'];

  return (
    <div className="view" data-testid="view-handshakes">
      <div className="viewhead">
        <h1>Handshakes</h1>
        <span className="muted">{all.length} recorded</span>
        <span className="grow" />
        {(['all', 'upstream', 'downstream'] as const).map((l) => (
          <button key={l} className={`btn small ${legFilter === l ? 'on' : ''}`} onClick={() => setLegFilter(l)}>{l}</button>
        ))}
      </div>
      <Group orientation="horizontal" style={{ flex: 1, minHeight: 0 }}>
        <Panel defaultSize="38" minSize="20">
          <div className="pane scroll">
            <table className="grid" data-testid="handshake-list">
              <thead><tr><th>Time</th><th>Leg</th><th>Peer</th><th>Transport</th><th>Version</th><th className="num">Took</th></tr></thead>
              <tbody>
                {all.length === 0 && <tr><td colSpan={6} className="empty">No handshakes yet.</td></tr>}
                {all.map((r, i) => (
                  <tr key={`${r.id}-${r.at_ms}-${i}`} className={`click ${i === sel ? 'sel' : ''}`} onClick={() => setSel(i)}>
                    <td className="mono nowrap muted">{clock(r.at_ms)}</td>
                    <td>{r.leg}</td>
                    <td className="mono">{hsPeer(r, servers)}</td>
                    <td>{r.transport}</td>
                    <td className="mono">{r.error ? <span className="bad">failed</span> : r.chosen_version ?? '—'}</td>
                    <td className="num">{duration(r.duration_ms)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Panel>
        <Separator className="sep" />
        <Panel minSize="30">
          <div className="pane scroll pad col" data-testid="handshake-detail">
            {!h && <div className="empty">Select a handshake.</div>}
            {h && (
              <>
                <div className="row wrap">
                  <span className="mono" style={{ fontWeight: 600 }}>{peer}</span>
                  <span className="tag">{h.leg}</span>
                  <span className="tag">{h.transport}</span>
                  {h.era && <span className="tag">{h.era}</span>}
                  <span className={`pill st-${h.error ? 'failed' : 'ok'}`}>{h.error ? 'failed' : 'negotiated'}</span>
                  <span className="muted">{duration(h.duration_ms)} · {clock(h.at_ms)}</span>
                </div>
                {h.error && <div className="errline" data-testid="handshake-error">{h.error}</div>}
                <Sequence msgs={msgs} names={names} />
                <div className="muted" style={{ fontSize: 11 }}>
                  {h.leg === 'upstream' ? (frames.length ? `${frames.length} handshake frames from the upstream leg` : 'drawn from the handshake record (its frames are no longer in the page)') : 'drawn from the handshake record'}
                </div>
                <dl className="kv">
                  <dt>offered</dt><dd data-testid="offered">{h.offered_versions.join(', ') || '—'}</dd>
                  <dt>chosen</dt><dd data-testid="chosen">{h.chosen_version ?? '—'}</dd>
                  <dt>client</dt><dd>{JSON.stringify(h.client_info)}</dd>
                  <dt>server</dt><dd>{JSON.stringify(h.server_info)}</dd>
                  <dt>tools</dt><dd>{h.tool_count ?? '—'}</dd>
                </dl>
                {steps.length > 0 && (
                  <section className="section">
                    <h2>Negotiation steps</h2>
                    <table className="grid"><tbody>
                      {steps.map((n, i) => (
                        <tr key={i}><td className="mono muted">{clock(n.at_ms)}</td><td className="mono">{n.step}</td><td className="mono">{n.offered.join(', ')}</td><td className="mono">{n.chosen ?? ''}</td><td className="muted">{n.detail ?? ''}</td></tr>
                      ))}
                    </tbody></table>
                  </section>
                )}
                <section className="section">
                  <h2>Capabilities</h2>
                  <table className="grid" data-testid="caps">
                    <thead><tr><th>Capability</th><th>Client declared</th><th>Server granted</th></tr></thead>
                    <tbody>
                      {capabilityDiff(h).map((c) => (
                        <tr key={c.key}>
                          <td className="mono">{c.key}</td>
                          <td className={c.requested ? 'ok' : 'faint'}>{c.requested ? '✓' : '—'}</td>
                          <td className={c.granted ? 'ok' : 'faint'}>{c.granted ? '✓' : '—'}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </section>
              </>
            )}
          </div>
        </Panel>
      </Group>
    </div>
  );
}
