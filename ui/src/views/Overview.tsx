/** Overview: servers by state, live call figures and chart, the latest handshakes and failures. */
import { useEffect, useMemo, useState } from 'react';
import { metrics, setOverview, useApp } from '../store/app';
import { api } from '../api/client';
import { LiveChart } from '../components/LiveChart';
import { ago, duration, num } from '../lib/format';
import { hsPeer } from '../lib/handshake';

function useNowSec(): number {
  const [now, setNow] = useState(() => Math.floor(Date.now() / 1000));
  useEffect(() => {
    const t = setInterval(() => setNow(Math.floor(Date.now() / 1000)), 1000);
    return () => clearInterval(t);
  }, []);
  return now;
}

export function Overview() {
  const servers = useApp((s) => s.servers);
  const overview = useApp((s) => s.overview);
  const handshakes = useApp((s) => s.handshakes);
  const traces = useApp((s) => s.traces);
  const health = useApp((s) => s.health);
  const lost = useApp((s) => s.lost);
  useApp((s) => s.metricsVersion);
  const now = useNowSec();

  useEffect(() => {
    const load = () => api.overview().then(setOverview, () => undefined);
    load();
    const t = setInterval(load, 5000);
    return () => clearInterval(t);
  }, []);

  const list = Object.values(servers);
  const count = (st: string) => list.filter((v) => v.state === st).length;
  const live = metrics.summary(now, 10);
  const calls = overview?.calls;

  const failures = useMemo(() => {
    const out: { at: number; what: string; detail: string }[] = [];
    for (const h of handshakes) if (h.error) out.push({ at: h.at_ms, what: `handshake ${h.leg} ${h.server_name ?? ''}`, detail: h.error });
    for (const t of traces) if (t.outcome !== 'ok') out.push({ at: t.at_ms, what: `${t.method}${t.name ? ' ' + t.name : ''}`, detail: `${t.outcome}${t.error ? ': ' + t.error : ''}` });
    for (const [server, hs] of Object.entries(health)) for (const e of hs) if (e.bad) out.push({ at: e.at_ms, what: server, detail: e.text });
    return out.sort((a, b) => b.at - a.at).slice(0, 12);
  }, [handshakes, traces, health]);

  return (
    <div className="view" data-testid="view-overview">
      <div className="viewhead">
        <h1>Overview</h1>
        {overview && (
          <span className="muted">
            router {overview.router.version} · up {duration(overview.router.uptime_ms)} · {([] as string[]).concat(overview.router.listen).join(', ')} ·{' '}
            {overview.router.revisions.join(', ')}
          </span>
        )}
      </div>
      <div className="scroll pad col" style={{ gap: 12 }}>
        <div className="cards">
          <div className="card" data-testid="card-ready"><div className="k">Ready</div><div className={`v ${count('ready') ? 'ok' : 'muted'}`}>{count('ready')}</div></div>
          <div className="card"><div className="k">Degraded</div><div className={`v ${count('degraded') ? 'warn' : 'muted'}`}>{count('degraded')}</div></div>
          <div className={`card ${count('unavailable') ? 'red' : ''}`} data-testid="card-unavailable"><div className="k">Unavailable</div><div className="v">{count('unavailable')}</div></div>
          <div className="card"><div className="k">Pending</div><div className="v muted">{count('pending')}</div></div>
          <div className="card" data-testid="card-rate"><div className="k">Calls/s (10 s)</div><div className="v">{num(live.perS, 1)}</div></div>
          <div className="card"><div className="k">p50 / p99</div><div className="v">{live.p50 === null ? '—' : num(live.p50, 1)}<small>/ {live.p99 === null ? '—' : num(live.p99, 1)} ms</small></div></div>
          <div className={`card ${live.errors ? 'red' : ''}`}><div className="k">Errors (10 s)</div><div className="v">{live.errors}</div></div>
          <div className="card"><div className="k">Calls (60 s)</div><div className="v">{calls ? num(calls.total) : '—'}<small>{calls ? `${num(calls.errors)} err` : ''}</small></div></div>
          <div className={`card ${lost.total ? 'red' : ''}`}><div className="k">Events lost</div><div className="v">{num(lost.total)}</div></div>
        </div>
        <section className="section">
          <h2>Calls through /mcp — last 2 minutes</h2>
          <div className="body"><LiveChart /></div>
        </section>
        <div style={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fit, minmax(420px, 1fr))', gap: 12 }}>
          <section className="section">
            <h2>Servers</h2>
            <table className="grid">
              <thead><tr><th>Server</th><th>State</th><th>Reason</th><th className="num">Tools</th></tr></thead>
              <tbody>
                {list.length === 0 && <tr><td colSpan={4} className="empty">No servers registered.</td></tr>}
                {list.map((v) => (
                  <tr key={v.name} data-testid={`ov-server-${v.name}`}>
                    <td className="mono">{v.name}</td>
                    <td><span className={`pill st-${v.state}`}>{v.state}</span></td>
                    <td className="muted ellipsis" style={{ maxWidth: 170 }} title={v.reason}>{v.reason}</td>
                    <td className="num">{v.tools.length}{v.quarantined.length ? <span className="bad"> +{v.quarantined.length}q</span> : null}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
          <section className="section">
            <h2>Latest handshakes</h2>
            <table className="grid">
              <thead><tr><th>When</th><th>Leg</th><th>Peer</th><th>Version</th><th className="num">Took</th></tr></thead>
              <tbody>
                {handshakes.length === 0 && <tr><td colSpan={5} className="empty">No handshakes yet.</td></tr>}
                {handshakes.slice(0, 8).map((h, i) => (
                  <tr key={`${h.id}-${i}`}>
                    <td className="muted nowrap">{ago(h.at_ms, now * 1000)}</td>
                    <td>{h.leg}</td>
                    <td className="mono ellipsis" style={{ maxWidth: 140 }} title={hsPeer(h, servers)}>{hsPeer(h, servers)}</td>
                    <td className="mono nowrap">{h.error ? <span className="bad">failed</span> : h.chosen_version}</td>
                    <td className="num nowrap">{duration(h.duration_ms)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
          <section className="section">
            <h2>Latest failures</h2>
            <table className="grid">
              <thead><tr><th>When</th><th>What</th><th>Detail</th></tr></thead>
              <tbody>
                {failures.length === 0 && <tr><td colSpan={3} className="empty">No failures.</td></tr>}
                {failures.map((f, i) => (
                  <tr key={i}>
                    <td className="muted nowrap">{ago(f.at, now * 1000)}</td>
                    <td className="mono nowrap">{f.what}</td>
                    <td className="bad" style={{ wordBreak: "break-word" }}>{f.detail.length > 160 ? f.detail.slice(0, 159) + "…" : f.detail}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </div>
      </div>
    </div>
  );
}

