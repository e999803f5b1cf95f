/**
 * Sessions & affinity: downstream 2025-11-25 sessions and 2026-07-28 callers with the upstream
 * sessions each is bound to; the replica groups with their members' live load and affinity
 * bindings (`/api/groups`, polled every 2 s while the view is open); and the scheduler's routing
 * decisions (`/api/decisions`, then live `route` events), filtered by the selected session's
 * key and by group, one of them opened with every candidate and each layer's verdict.
 */
import { Fragment, useEffect, useMemo, useState } from 'react';
import { Group, Panel, Separator } from 'react-resizable-panels';
import { setSessions, useApp } from '../store/app';
import { api } from '../api/client';
import { subscribe } from '../api/events';
import { ago, clock, num } from '../lib/format';
import { useListNav } from '../lib/useListNav';
import { decisionFlags, shortReason, filterDecisions, keyLabels, MAX_DECISIONS, mergeDecisions, secs, sessionFingerprint, successPct } from '../lib/routing';
import type { Decision, GroupView, UpstreamBinding } from '../api/types';

const GROUPS_POLL_MS = 2_000;

function Bindings({ bs }: { bs: UpstreamBinding[] | undefined }) {
  if (!bs || bs.length === 0) return <span className="faint">none yet</span>;
  return (
    <div className="col" style={{ gap: 2 }}>
      {bs.map((b, i) => (
        <div key={i} className="row nowrap">
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

/** `tool "read"` → a faint kind and the name, unquoted. */
function targetCell(t: string) {
  const m = /^(\w+) "(.*)"$/.exec(t);
  return m ? <><span className="faint">{m[1]}</span> {m[2]}</> : t;
}

function clientOf(info: unknown): string {
  const i = info as { name?: string; version?: string } | null;
  return i?.name ? `${i.name}${i.version ? ' ' + i.version : ''}` : '—';
}

/** The replica groups: members with their load, and the affinity bindings. */
function Groups({ groups, err, labels, onKey, activeKey }: { groups: GroupView[] | null; err: string | null; labels: Map<string, string>; onKey: (k: string) => void; activeKey: string | null }) {
  return (
    <section className="section" data-testid="groups">
      <h2>Replica groups <span className="faint" style={{ textTransform: 'none' }}>live · every 2 s</span></h2>
      {err && <div className="errline pad">{err}</div>}
      {groups && groups.length === 0 && <div className="empty">No replica groups: every server serves its own names.</div>}
      {(groups ?? []).map((g) => (
        <div key={g.name} className="rgroup" data-testid={`group-${g.name}`}>
          <div className="row rgroup-head">
            <span className="mono" style={{ fontWeight: 600 }}>{g.name}</span>
            <span className="tag">{g.formed}</span>
            <span className="faint">{g.members.length} members · {g.bindings.length} bindings</span>
          </div>
          <table className="grid" data-testid={`members-${g.name}`}>
            <thead><tr><th>Member</th><th>State</th><th className="num">In flight</th><th className="num">EWMA</th></tr></thead>
            <tbody>
              {g.members.map((m) => (
                <tr key={m.server}>
                  <td className="mono">{m.server}</td>
                  <td><span className={`pill st-${m.state}`}>{m.state}</span>{m.draining && <span className="pill st-degraded" style={{ marginLeft: 4 }}>draining</span>}</td>
                  <td className="num">{m.in_flight}</td>
                  <td className="num">{m.ewma_ms === null ? '—' : `${num(m.ewma_ms, 1)} ms`}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <table className="grid" data-testid={`bindings-${g.name}`}>
            <thead><tr><th>Affinity key</th><th>→ Server</th><th className="num">Idle</th><th className="num">OK / failed</th><th className="num">Success</th></tr></thead>
            <tbody>
              {g.bindings.length === 0 && <tr><td colSpan={5} className="empty">No keys bound yet.</td></tr>}
              {g.bindings.map((b) => {
                const pct = successPct(b);
                return (
                  <tr key={b.key} className={`click ${activeKey === b.key ? 'sel' : ''}`} onClick={() => onKey(b.key)} title="Show this key's decisions">
                    <td className="mono">{b.key}{labels.has(b.key) && <div className="faint" style={{ fontFamily: 'var(--font)' }}>{labels.get(b.key)}</div>}</td>
                    <td className="mono">{b.server}</td>
                    <td className="num muted">{secs(b.idle_secs)}</td>
                    <td className="num">{b.ok} / <span className={b.failed ? 'bad' : ''}>{b.failed}</span></td>
                    <td className={`num ${pct !== null && pct < 95 ? 'bad' : 'ok'}`}>{pct === null ? '—' : `${num(pct, pct === 100 ? 0 : 1)} %`}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ))}
    </section>
  );
}

function DecisionDetail({ d, labels }: { d: Decision | null; labels: Map<string, string> }) {
  if (!d) return <div className="empty">Select a decision to see its candidates.</div>;
  return (
    <div className="col" data-testid="decision-detail">
      <div className="row wrap">
        <span className="mono" style={{ fontWeight: 600 }}>{d.target}</span>
        <span className="faint">in</span>
        <span className="mono">{d.group}</span>
        <span className="faint">→</span>
        <span className={`pill st-${d.chosen ? 'ok' : 'failed'}`} data-testid="decision-chosen">{d.chosen ?? 'refused'}</span>
        <span className="tag">{d.layer}</span>
        {decisionFlags(d).map((f) => <span key={f} className="pill st-degraded">{f}</span>)}
      </div>
      <div className="reason" data-testid="decision-reason">{d.reason}</div>
      <table className="grid compact" data-testid="candidates">
        <thead><tr><th>Candidate</th><th>Layer 1</th><th className="num">Score</th><th className="num">In flight</th><th className="num">EWMA</th><th className="num">CPU</th><th title="Score above the overload threshold: no new keys">Overload</th></tr></thead>
        <tbody>
          {d.candidates.length === 0 && <tr><td colSpan={7} className="empty">No candidates.</td></tr>}
          {d.candidates.map((c) => {
            const chosen = c.server === d.chosen;
            return (
              <Fragment key={c.server}>
                <tr className={`cand ${chosen ? 'chosen' : ''} ${c.affinity ? 'hasaff' : ''}`} data-chosen={chosen ? 'true' : undefined} data-server={c.server}>
                  <td className="mono nowrap">{chosen ? '▸ ' : ''}{c.server}</td>
                  <td className={c.rejected ? 'bad' : 'ok'}>{c.rejected ?? 'matched'}</td>
                  <td className="num">{c.score === null ? '—' : num(c.score, 1)}</td>
                  <td className="num">{c.in_flight}</td>
                  <td className="num nowrap">{c.ewma_ms === null ? '—' : `${num(c.ewma_ms, 1)} ms`}</td>
                  <td className="num nowrap">{c.cpu_percent === null ? '—' : `${num(c.cpu_percent, 0)} %`}</td>
                  <td className={c.overloaded ? 'bad' : 'faint'}>{c.overloaded ? 'yes' : 'no'}</td>
                </tr>
                {c.affinity && (
                  <tr className={`affrow ${chosen ? 'chosen' : ''}`}>
                    <td colSpan={7} className="muted"><span className="faint">affinity:</span> {c.affinity}</td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
      <dl className="kv">
        <dt>key</dt><dd>{d.key ?? 'no affinity key'}{d.key && labels.has(d.key) ? ` · ${labels.get(d.key)}` : ''} <span className="faint nowrap">({d.key_source})</span></dd>
        <dt>dropped</dt><dd data-testid="decision-dropped">{d.dropped.length ? d.dropped.join(', ') : 'none'}</dd>
        <dt>excluded</dt><dd data-testid="decision-excluded">{d.excluded.length ? d.excluded.join(', ') : 'none'}</dd>
        <dt>at</dt><dd>{clock(d.at_ms)}</dd>
        <dt>attempt</dt><dd>{d.attempt}</dd>
        <dt>id</dt><dd>{d.id}</dd>
      </dl>
    </div>
  );
}

export function SessionsView() {
  const data = useApp((s) => s.sessions);
  const version = useApp((s) => s.sessionsVersion);
  const [err, setErr] = useState<string | null>(null);
  // The selected session or caller, by its tag or key (rows reorder as they are seen).
  const [selRow, setSelRow] = useState<string | null>(null);
  const [focus, setFocus] = useState<'sessions' | 'decisions'>('decisions');
  const [groups, setGroups] = useState<GroupView[] | null>(null);
  const [groupsErr, setGroupsErr] = useState<string | null>(null);
  const [decisions, setDecisions] = useState<Decision[]>([]);
  const [decErr, setDecErr] = useState<string | null>(null);
  const [keyFilter, setKeyFilter] = useState<string | null>(null);
  const [groupFilter, setGroupFilter] = useState<string>('');
  const [selId, setSelId] = useState<string | null>(null);

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

  // Replica groups: polled while the view is open and the page visible.
  useEffect(() => {
    let live = true;
    const load = () => {
      if (document.visibilityState === 'hidden') return;
      api.groups().then(
        (g) => {
          if (!live) return;
          setGroups(g);
          setGroupsErr(null);
        },
        (e: Error) => live && setGroupsErr(e.message),
      );
    };
    load();
    const t = setInterval(load, GROUPS_POLL_MS);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, []);

  // Decisions: live `route` events from the moment the view opens, plus the newest stored ones.
  useEffect(() => {
    let live = true;
    const off = subscribe('route', (evs) => {
      const ds = evs.flatMap((e) => (e.type === 'route' ? [e.decision] : []));
      setDecisions((prev) => mergeDecisions(prev, ds));
    });
    api.decisions({ limit: MAX_DECISIONS }).then(
      (ds) => {
        if (!live) return;
        setDecisions((prev) => mergeDecisions(prev, [...ds].reverse()));
        setDecErr(null);
      },
      (e: Error) => live && setDecErr(e.message),
    );
    return () => {
      live = false;
      off();
    };
  }, []);

  const sessions = data?.sessions ?? [];
  const callers = data?.callers ?? [];
  const labels = useMemo(() => keyLabels(sessions), [sessions]);
  const shown = useMemo(() => filterDecisions(decisions, { key: keyFilter, group: groupFilter || null }), [decisions, keyFilter, groupFilter]);
  const groupNames = useMemo(() => [...new Set([...(groups ?? []).map((g) => g.name), ...decisions.map((d) => d.group)])].sort(), [groups, decisions]);
  const perKey = useMemo(() => {
    const m = new Map<string, number>();
    for (const d of decisions) if (d.key) m.set(d.key, (m.get(d.key) ?? 0) + 1);
    return m;
  }, [decisions]);
  const selIdx = shown.findIndex((d) => d.id === selId);
  const rowIds = useMemo(() => [...sessions.map((s) => s.tag), ...callers.map((c) => c.key)], [sessions, callers]);
  const selSession = selRow === null ? -1 : rowIds.indexOf(selRow);
  const setSelSession = (i: number) => setSelRow(rowIds[i] ?? null);
  const selected = selIdx >= 0 ? (shown[selIdx] ?? null) : null;

  const pickSession = (i: number) => {
    setSelSession(i);
    setFocus('sessions');
    const s = sessions[i];
    setKeyFilter(s ? sessionFingerprint(s.tag) : null);
  };
  const pickDecision = (i: number) => {
    setFocus('decisions');
    setSelId(shown[i]?.id ?? null);
  };
  useListNav(
    focus === 'sessions' ? sessions.length + callers.length : shown.length,
    focus === 'sessions' ? selSession : selIdx,
    focus === 'sessions' ? pickSession : pickDecision,
  );

  return (
    <div className="view" data-testid="view-sessions">
      <div className="viewhead">
        <h1>Sessions &amp; affinity</h1>
        <span className="muted">{sessions.length} sessions · {callers.length} callers · {(groups ?? []).length} replica groups · {decisions.length} decisions</span>
      </div>
      <Group orientation="vertical" style={{ flex: 1, minHeight: 0 }}>
        <Panel defaultSize="50" minSize="15">
          <div className="pane scroll pad">
            <div className="sessgrid">
              <div className="col" style={{ gap: 12, minWidth: 0 }}>
                {err && <div className="errline">{err}</div>}
                <section className="section">
                  <h2>Downstream sessions (2025-11-25, Mcp-Session-Id) <span className="faint" style={{ textTransform: 'none' }}>click one to see its decisions</span></h2>
                  <table className="grid" data-testid="sessions-table">
                    <thead><tr><th>Session</th><th>Client</th><th>Protocol</th><th>Last seen</th><th className="num">Decisions</th><th>Upstream bindings</th></tr></thead>
                    <tbody>
                      {sessions.length === 0 && <tr><td colSpan={6} className="empty">No 2025-11-25 sessions open.</td></tr>}
                      {sessions.map((s, i) => {
                        const fp = sessionFingerprint(s.tag);
                        return (
                          <tr key={s.tag} data-key={fp ?? ''} className={`click ${selSession === i ? 'sel' : ''}`} onClick={() => (selSession === i && keyFilter ? (setSelSession(-1), setKeyFilter(null)) : pickSession(i))}>
                            <td className="mono nowrap">{s.tag}{s.ended ? <span className="faint"> (ended)</span> : null}<div className="faint">key {fp ?? '—'}</div></td>
                            <td>{clientOf(s.client_info)} <span className="faint">{s.transport} · {s.requests} req</span></td>
                            <td className="mono nowrap">{s.protocol_version}</td>
                            <td className="muted nowrap">{ago(s.last_seen_ms)}</td>
                            <td className="num">{fp ? (perKey.get(fp) ?? 0) : '—'}</td>
                            <td><Bindings bs={s.bindings} /></td>
                          </tr>
                        );
                      })}
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
                        <tr key={c.key} className={`click ${selSession === sessions.length + i ? 'sel' : ''}`} onClick={() => pickSession(sessions.length + i)}>
                          <td className="mono">{c.key}</td>
                          <td>{c.name ?? '—'}{c.version ? <span className="faint"> {c.version}</span> : null} <span className="faint">{c.transport}</span></td>
                          <td className="mono nowrap">{c.protocol_version ?? '—'}</td>
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
              <Groups groups={groups} err={groupsErr} labels={labels} activeKey={keyFilter} onKey={(k) => { setKeyFilter(keyFilter === k ? null : k); setSelSession(-1); }} />
            </div>
          </div>
        </Panel>
        <Separator className="sep" />
        <Panel minSize="20">
          <Group orientation="horizontal" style={{ height: '100%' }}>
            <Panel defaultSize="64" minSize="30">
              <div className="pane" data-testid="decisions-pane">
                <div className="legtitle" style={{ alignItems: 'center' }}>
                  <span>Routing decisions</span>
                  <span className="faint" style={{ textTransform: 'none' }}>{shown.length} of {decisions.length} (newest {MAX_DECISIONS} kept)</span>
                  <span className="grow" />
                  {keyFilter && (
                    <button className="btn small on" data-testid="key-filter" onClick={() => { setKeyFilter(null); setSelSession(-1); }} title="Clear the key filter">
                      key {labels.get(keyFilter) ?? keyFilter} ×
                    </button>
                  )}
                  <select className="field" style={{ padding: '0 4px', textTransform: 'none' }} data-testid="group-filter" value={groupFilter} onChange={(e) => setGroupFilter(e.target.value)}>
                    <option value="">all groups</option>
                    {groupNames.map((g) => <option key={g} value={g}>{g}</option>)}
                  </select>
                </div>
                {decErr && <div className="errline pad">{decErr}</div>}
                <div className="scroll" style={{ flex: 1 }}>
                  <table className="grid decisions" data-testid="decisions">
                    <colgroup><col style={{ width: 90 }} /><col style={{ width: 150 }} /><col style={{ width: 58 }} /><col style={{ width: 122 }} /><col style={{ width: 66 }} /><col style={{ width: 72 }} /><col /><col style={{ width: 84 }} /></colgroup>
                    <thead><tr><th>Time</th><th>Target</th><th>Group</th><th>Key</th><th>Chosen</th><th>Layer</th><th>Reason</th><th>Flags</th></tr></thead>
                    <tbody>
                      {shown.length === 0 && <tr><td colSpan={8} className="empty">{decisions.length ? 'No decisions match the filter.' : 'No routing decisions yet: they appear as calls are routed.'}</td></tr>}
                      {shown.map((d, i) => (
                        <tr key={d.id} data-id={d.id} className={`click ${i === selIdx ? 'sel' : ''}`} onClick={() => pickDecision(i)}>
                          <td className="mono nowrap muted">{clock(d.at_ms)}</td>
                          <td className="mono clip" title={d.target}>{targetCell(d.target)}</td>
                          <td className="mono clip">{d.group}</td>
                          <td className="mono clip" title={d.key ?? ''}>{d.key ? (labels.get(d.key)?.replace(/ \(s-.*\)$/, '') ?? d.key) : <span className="faint">—</span>}</td>
                          <td className="mono clip">{d.chosen ?? <span className="bad">refused</span>}</td>
                          <td><span className="tag">{d.layer}</span></td>
                          <td className="clip muted" title={d.reason}>{shortReason(d)}</td>
                          <td className="nowrap">{decisionFlags(d).map((f) => <span key={f} className="pill st-degraded">{f}</span>)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              </div>
            </Panel>
            <Separator className="sep" />
            <Panel minSize="25">
              <div className="pane scroll pad">
                <DecisionDetail d={selected} labels={labels} />
              </div>
            </Panel>
          </Group>
        </Panel>
      </Group>
    </div>
  );
}
