/** Servers & processes: state and reason, pid, restarts, uptime, memory, stderr tail, health history; add, remove, restart, import mcp.json. */
import { useEffect, useMemo, useState } from 'react';
import { Group, Panel, Separator } from 'react-resizable-panels';
import { putServer, setServers, useApp } from '../store/app';
import { api } from '../api/client';
import { pickFiles } from '../platform';
import { useListNav } from '../lib/useListNav';
import { ago, bytes, clock, duration } from '../lib/format';
import type { ServerView } from '../api/types';

/** Splits a command line into words, honouring double and single quotes. Pure, for tests. */
export function splitCommand(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let q: string | null = null;
  let has = false;
  for (const ch of line) {
    if (q) {
      if (ch === q) q = null;
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      q = ch;
      has = true;
    } else if (/\s/.test(ch)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += ch;
      has = true;
    }
  }
  if (has) out.push(cur);
  return out;
}

function AddServer({ onDone }: { onDone: (msg: string) => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'command' | 'url'>('command');
  const [target, setTarget] = useState('');
  const [labels, setLabels] = useState('');
  const [err, setErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setErr(null);
    const words = splitCommand(target);
    const body =
      kind === 'command'
        ? { name: name.trim(), command: words[0] ?? '', args: words.slice(1) }
        : { name: name.trim(), url: target.trim() };
    const ls = labels.split(',').map((l) => l.trim()).filter(Boolean);
    setBusy(true);
    try {
      const v = await api.addServer(ls.length ? { ...body, labels: ls } : body);
      putServer(v);
      setName('');
      setTarget('');
      onDone(`added ${v.name}`);
    } catch (x) {
      setErr((x as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="row wrap" onSubmit={submit} data-testid="add-server">
      <input className="field mono" placeholder="name" value={name} onChange={(e) => setName(e.target.value)} style={{ width: 130 }} aria-label="server name" required />
      <select className="field" value={kind} onChange={(e) => setKind(e.target.value as 'command' | 'url')} aria-label="kind">
        <option value="command">stdio command</option>
        <option value="url">URL</option>
      </select>
      <input className="field mono grow" placeholder={kind === 'command' ? 'npx -y @modelcontextprotocol/server-everything stdio' : 'http://127.0.0.1:8080/mcp'} value={target} onChange={(e) => setTarget(e.target.value)} aria-label="command or URL" required style={{ minWidth: 260 }} />
      <input className="field" placeholder="labels (comma-separated)" value={labels} onChange={(e) => setLabels(e.target.value)} style={{ width: 170 }} aria-label="labels" />
      <button className="btn primary" disabled={busy}>Add server</button>
      {err && <div className="errline" style={{ flexBasis: '100%' }} data-testid="add-error">{err}</div>}
    </form>
  );
}

function Detail({ v }: { v: ServerView }) {
  const health = useApp((s) => s.health[v.name]) ?? [];
  const stats = useApp((s) => s.procStats[v.name]);
  const [msg, setMsg] = useState<string | null>(null);
  const act = async (what: 'restart' | 'remove') => {
    setMsg(null);
    try {
      if (what === 'restart') {
        await api.restartServer(v.name);
        setMsg('restart requested');
      } else {
        if (!confirm(`Remove server ${v.name}?`)) return;
        await api.removeServer(v.name);
        setServers(await api.servers());
      }
    } catch (x) {
      setMsg((x as Error).message);
    }
  };
  return (
    <div className="scroll pad col" data-testid="server-detail">
      <div className="row">
        <h2 className="mono" style={{ margin: 0, fontSize: 15 }}>{v.name}</h2>
        <span className={`pill st-${v.state}`}>{v.state}</span>
        <span className="grow" />
        <button className="btn small" onClick={() => act('restart')}>Restart</button>
        <button className="btn small danger" onClick={() => act('remove')}>Remove</button>
      </div>
      {msg && <div className="muted">{msg}</div>}
      <dl className="kv">
        <dt>reason</dt><dd>{v.reason}</dd>
        <dt>since</dt><dd>{ago(v.since_ms)}</dd>
        <dt>transport</dt><dd>{v.transport}</dd>
        <dt>endpoint</dt><dd>{v.endpoint}</dd>
        <dt>protocol</dt><dd>{v.protocol_version ?? '—'} {v.era ? `(${v.era})` : ''}</dd>
        <dt>server info</dt><dd>{JSON.stringify(v.server_info)}</dd>
        <dt>labels</dt><dd>{v.labels.length ? v.labels.join(', ') : '—'}</dd>
        <dt>pid</dt><dd>{v.status.pid ?? stats?.pid ?? '—'}</dd>
        <dt>restarts</dt><dd>{v.status.restarts}</dd>
        <dt>memory</dt><dd>{bytes(stats?.rss_bytes ?? v.status.memory_bytes)}{stats ? ` · cpu ${stats.cpu_percent.toFixed(1)} %` : ''}</dd>
        <dt>session</dt><dd>{v.status.session_id ?? '—'}</dd>
        {v.status.last_error && (<><dt>last error</dt><dd className="bad">{v.status.last_error}</dd></>)}
        {v.detail && (<><dt>detail</dt><dd>{v.detail}</dd></>)}
      </dl>
      <section className="section">
        <h2>stderr tail</h2>
        <pre className="raw" data-testid="stderr">{v.status.stderr_tail.length ? v.status.stderr_tail.join('\n') : '(empty)'}</pre>
      </section>
      <section className="section">
        <h2>Health history</h2>
        <table className="grid">
          <tbody>
            {health.length === 0 && <tr><td className="empty">No changes since the panel opened.</td></tr>}
            {health.map((h, i) => (
              <tr key={i}><td className="mono muted nowrap">{clock(h.at_ms)}</td><td className={h.bad ? 'bad' : ''}>{h.text}</td></tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}

export function Servers() {
  const servers = useApp((s) => s.servers);
  const stats = useApp((s) => s.procStats);
  const list = useMemo(() => Object.values(servers).sort((a, b) => a.name.localeCompare(b.name)), [servers]);
  const [sel, setSel] = useState(0);
  const [note, setNote] = useState<string | null>(null);
  const [importErr, setImportErr] = useState<string | null>(null);
  const [, tick] = useState(0);
  useListNav(list.length, sel, setSel);

  useEffect(() => {
    api.servers().then(setServers, () => undefined);
    const t = setInterval(() => {
      tick((n) => n + 1);
    }, 5000);
    return () => clearInterval(t);
  }, []);

  const importFile = async () => {
    setImportErr(null);
    const [file] = await pickFiles('.json,application/json');
    if (!file) return;
    try {
      const r = await api.importMcpJson(await file.text());
      setServers(await api.servers());
      setNote(`imported ${r.added.length} server(s)${r.added.length ? ': ' + r.added.join(', ') : ''}`);
      if (r.errors.length) setImportErr(r.errors.map((e) => `${e.name}: ${e.error}`).join('; '));
    } catch (x) {
      setImportErr((x as Error).message);
    }
  };

  const current = list[Math.min(sel, list.length - 1)];
  return (
    <div className="view" data-testid="view-servers">
      <div className="viewhead">
        <h1>Servers &amp; processes</h1>
        <span className="muted">{list.length} registered</span>
        <span className="grow" />
        {note && <span className="muted">{note}</span>}
        <button className="btn" onClick={importFile} data-testid="import">Import mcp.json…</button>
      </div>
      <div className="pad" style={{ borderBottom: '1px solid var(--line)' }}>
        <AddServer onDone={setNote} />
        {importErr && <div className="errline">{importErr}</div>}
      </div>
      <Group orientation="horizontal" style={{ flex: 1, minHeight: 0 }}>
        <Panel defaultSize="62" minSize="25">
          <div className="pane scroll">
            <table className="grid" data-testid="servers-table">
              <thead>
                <tr><th>Server</th><th>State</th><th>Reason</th><th>Transport</th><th className="num">PID</th><th className="num">Restarts</th><th className="num">Up</th><th className="num">Memory</th><th className="num">Tools</th></tr>
              </thead>
              <tbody>
                {list.length === 0 && <tr><td colSpan={9} className="empty">No servers. Add one above or import an mcp.json.</td></tr>}
                {list.map((v, i) => (
                  <tr key={v.name} className={`click ${i === sel ? 'sel' : ''}`} onClick={() => setSel(i)} data-testid={`server-row-${v.name}`} data-state={v.state}>
                    <td className="mono">{v.name}</td>
                    <td><span className={`pill st-${v.state}`}>{v.state}</span></td>
                    <td className="ellipsis muted" style={{ maxWidth: 220 }} title={v.reason}>{v.reason}</td>
                    <td>{v.transport}</td>
                    <td className="num mono">{v.status.pid ?? '—'}</td>
                    <td className="num">{v.status.restarts}</td>
                    <td className="num nowrap">{v.state === 'ready' ? duration(Date.now() - v.since_ms) : '—'}</td>
                    <td className="num nowrap">{bytes(stats[v.name]?.rss_bytes ?? v.status.memory_bytes)}</td>
                    <td className="num nowrap" title={v.quarantined.length ? `${v.quarantined.length} quarantined` : undefined}>{v.tools.length}{v.quarantined.length ? <span className="bad"> +{v.quarantined.length}⚠</span> : null}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Panel>
        <Separator className="sep" />
        <Panel minSize="25">
          <div className="pane">{current ? <Detail v={current} /> : <div className="empty">Select a server.</div>}</div>
        </Panel>
      </Group>
    </div>
  );
}
