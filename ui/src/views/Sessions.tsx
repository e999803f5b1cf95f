/**
 * Sessions & affinity: downstream 2025-11-25 sessions and 2026-07-28 callers, each with the
 * upstream sessions it is bound to. Routing decisions arrive with the scheduler; until then the
 * view says so plainly.
 */
import { useEffect, useState } from 'react';
import { setSessions, useApp } from '../store/app';
import { api } from '../api/client';
import { ago } from '../lib/format';
import { useListNav } from '../lib/useListNav';
import type { UpstreamBinding } from '../api/types';

function Bindings({ bs }: { bs: UpstreamBinding[] | undefined }) {
  if (!bs || bs.length === 0) return <span className="faint">none yet</span>;
  return (
    <div className="col" style={{ gap: 2 }}>
      {bs.map((b, i) => (
        <div key={i} className="row">
          <span className="mono">{b.server}</span>
          <span className="faint">→</span>
          <span className="tag mono">{b.upstream_session ?? 'stateless'}</span>
          <span className="faint">{b.upstream_transport} · {b.calls} calls</span>
          {b.capabilities.length > 0 && <span className="faint mono ellipsis" style={{ maxWidth: 220 }}>{b.capabilities.join(', ')}</span>}
        </div>
      ))}
    </div>
  );
}

function clientOf(info: unknown): string {
  const i = info as { name?: string; version?: string } | null;
  return i?.name ? `${i.name}${i.version ? ' ' + i.version : ''}` : '—';
}

export function SessionsView() {
  const data = useApp((s) => s.sessions);
  const version = useApp((s) => s.sessionsVersion);
  const [err, setErr] = useState<string | null>(null);
  const [sel, setSel] = useState(-1);
  useEffect(() => {
    const load = () =>
      api.sessions().then(
        (s) => {
          setSessions(s);
          setErr(null);
        },
        (e: Error) => setErr(e.message),
      );
    load();
    const t = setInterval(load, 3000);
    return () => clearInterval(t);
  }, [version]);
  const sessions = data?.sessions ?? [];
  const callers = data?.callers ?? [];
  useListNav(sessions.length + callers.length, sel, setSel);

  return (
    <div className="view" data-testid="view-sessions">
      <div className="viewhead">
        <h1>Sessions &amp; affinity</h1>
        <span className="muted">{sessions.length} sessions · {callers.length} callers</span>
      </div>
      <div className="scroll pad col" style={{ gap: 12 }}>
        {err && <div className="errline">{err}</div>}
        {!data?.scheduling && (
          <div className="notice" data-testid="scheduler-notice">
            {(data?.scheduling_note ||
              'Routing decisions (candidates, load scores, affinity keys, windows and success rates) arrive with the scheduler; this router does not make them yet').replace(/[.\s]*$/, '.')}{' '}
            Shown here: the downstream sessions and callers the gateway holds and the upstream sessions each is bound to.
          </div>
        )}
        <section className="section">
          <h2>Downstream sessions (2025-11-25, Mcp-Session-Id)</h2>
          <table className="grid" data-testid="sessions-table">
            <thead><tr><th>Session</th><th>Client</th><th>Protocol</th><th>Created</th><th>Last seen</th><th>Upstream bindings</th></tr></thead>
            <tbody>
              {sessions.length === 0 && <tr><td colSpan={6} className="empty">No 2025-11-25 sessions open.</td></tr>}
              {sessions.map((s, i) => (
                <tr key={s.tag} className={`click ${sel === i ? 'sel' : ''}`} onClick={() => setSel(i)}>
                  <td className="mono">{s.tag}{s.ended ? <span className="faint"> (ended)</span> : null}</td>
                  <td>{clientOf(s.client_info)} <span className="faint">{s.transport} · {s.requests} req</span></td>
                  <td className="mono">{s.protocol_version}</td>
                  <td className="muted nowrap">{ago(s.created_ms)}</td>
                  <td className="muted nowrap">{ago(s.last_seen_ms)}</td>
                  <td><Bindings bs={s.bindings} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
        <section className="section">
          <h2>Callers (2026-07-28, stateless)</h2>
          <table className="grid" data-testid="callers-table">
            <thead><tr><th>Caller</th><th>Client</th><th>Protocol</th><th className="num">Calls</th><th>Last seen</th><th>Upstream bindings</th></tr></thead>
            <tbody>
              {callers.length === 0 && <tr><td colSpan={6} className="empty">No 2026-07-28 callers seen.</td></tr>}
              {callers.map((c, i) => (
                <tr key={c.key} className={`click ${sel === sessions.length + i ? 'sel' : ''}`} onClick={() => setSel(sessions.length + i)}>
                  <td className="mono">{c.key}</td>
                  <td>{c.name ?? '—'}{c.version ? <span className="faint"> {c.version}</span> : null} <span className="faint">{c.transport}</span></td>
                  <td className="mono">{c.protocol_version ?? '—'}</td>
                  <td className="num">{c.requests}</td>
                  <td className="muted nowrap">{ago(c.last_seen_ms)}</td>
                  <td><Bindings bs={c.bindings} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
        {data?.scheduling !== null && data?.scheduling !== undefined && (
          <section className="section">
            <h2>Scheduling</h2>
            <pre className="raw">{JSON.stringify(data.scheduling, null, 2)}</pre>
          </section>
        )}
      </div>
    </div>
  );
}
