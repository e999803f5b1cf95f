/**
 * Registry: servers × tools matrix (quarantined tools marked with their errors), the selected
 * tool's rendered input schema, labels and states with reasons, and a live diff whenever a
 * catalog changes (`catalog_changed` events).
 */
import { useEffect, useMemo, useState } from 'react';
import { Group, Panel, Separator } from 'react-resizable-panels';
import { useApp } from '../store/app';
import { api } from '../api/client';
import { SchemaTree } from '../components/SchemaTree';
import { useListNav } from '../lib/useListNav';
import { clock } from '../lib/format';
import { hsPeer } from '../lib/handshake';
import type { CatalogView as Catalog, CatalogDiff } from '../api/types';

function DiffLines({ d }: { d: CatalogDiff }) {
  const parts: [string, string[], string][] = [
    ['tool', d.tools_added, '+'], ['tool', d.tools_removed, '−'], ['tool', d.tools_changed, '~'],
    ['prompt', d.prompts_added, '+'], ['prompt', d.prompts_removed, '−'], ['prompt', d.prompts_changed, '~'],
    ['resource', d.resources_added, '+'], ['resource', d.resources_removed, '−'], ['resource', d.resources_changed, '~'],
    ['template', d.templates_added, '+'], ['template', d.templates_removed, '−'], ['template', d.templates_changed, '~'],
  ];
  const rows = parts.filter(([, xs]) => xs.length);
  if (!rows.length) return <span className="faint">no difference</span>;
  return (
    <div className="col" style={{ gap: 2 }}>
      {rows.map(([what, xs, sign], i) => (
        <div key={i} className={sign === '+' ? 'diff-add' : sign === '−' ? 'diff-del' : 'diff-chg'}>
          {sign} {what}{xs.length > 1 ? 's' : ''}: {xs.slice(0, 30).join(', ')}{xs.length > 30 ? ` … (+${xs.length - 30})` : ''}
        </div>
      ))}
    </div>
  );
}

export function Registry() {
  const servers = useApp((s) => s.servers);
  const changes = useApp((s) => s.catalogChanges);
  const handshakes = useApp((s) => s.handshakes);
  const catalogVersion = useApp((s) => s.catalogVersion);
  const names = useMemo(() => Object.keys(servers).sort(), [servers]);
  const [catalogs, setCatalogs] = useState<Record<string, Catalog | string>>({});
  const [sel, setSel] = useState<{ tool: string; server: string } | null>(null);
  const [q, setQ] = useState('');

  const versionKey = names.map((n) => `${n}:${catalogVersion[n] ?? 0}:${servers[n]?.tools.length}`).join(',');
  useEffect(() => {
    let live = true;
    for (const n of names) {
      api.catalog(n).then(
        (c) => live && setCatalogs((cs) => ({ ...cs, [n]: c })),
        (e: Error) => live && setCatalogs((cs) => ({ ...cs, [n]: e.message })),
      );
    }
    return () => {
      live = false;
    };
  }, [versionKey]); // eslint-disable-line react-hooks/exhaustive-deps

  const rows = useMemo(() => {
    const set = new Set<string>();
    for (const n of names) {
      for (const t of servers[n]?.tools ?? []) set.add(t);
      for (const t of servers[n]?.quarantined ?? []) set.add(t.name);
    }
    const needle = q.toLowerCase();
    return [...set].sort().filter((t) => !needle || t.toLowerCase().includes(needle));
  }, [names, servers, q]);

  const selIndex = sel ? rows.indexOf(sel.tool) : -1;
  useListNav(rows.length, selIndex, (i) => {
    const tool = rows[i];
    if (!tool) return;
    const server = names.find((n) => servers[n]?.tools.includes(tool) || servers[n]?.quarantined.some((x) => x.name === tool)) ?? '';
    setSel({ tool, server });
  });

  // What each server granted in its latest upstream handshake.
  const caps = useMemo(() => {
    const out: Record<string, string[]> = {};
    for (const h of handshakes) {
      if (h.leg !== 'upstream' || h.error) continue;
      const name = hsPeer(h, servers);
      if (out[name]) continue;
      const c = h.server_capabilities;
      out[name] = c && typeof c === 'object' ? Object.keys(c as object).sort() : [];
    }
    return out;
  }, [handshakes, servers]);

  const quarantined = names.flatMap((n) => (servers[n]?.quarantined ?? []).map((x) => ({ server: n, ...x })));
  const cat = sel ? catalogs[sel.server] : undefined;
  const tool = sel && typeof cat === 'object' ? cat.tools.find((t) => t.name === sel.tool) : undefined;
  const qerr = sel ? servers[sel.server]?.quarantined.find((x) => x.name === sel.tool) : undefined;

  return (
    <div className="view" data-testid="view-registry">
      <div className="viewhead">
        <h1>Registry</h1>
        <span className="muted">{names.length} servers · {rows.length} tools · <span className={quarantined.length ? 'bad' : ''}>{quarantined.length} quarantined</span></span>
        <span className="grow" />
        <input className="field filterbox" data-filter placeholder="/ filter tools" value={q} onChange={(e) => setQ(e.target.value)} />
      </div>
      <Group orientation="horizontal" style={{ flex: 1, minHeight: 0 }}>
        <Panel defaultSize="55" minSize="25">
          <div className="pane scroll">
            <table className="grid matrix" data-testid="matrix">
              <thead>
                <tr>
                  <th>Tool</th>
                  {names.map((n) => (
                    <th key={n} title={servers[n]?.reason}>
                      <div className="mono">{n}</div>
                      <span className={`pill st-${servers[n]?.state}`}>{servers[n]?.state}</span>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                <tr>
                  <td className="muted">capabilities</td>
                  {names.map((n) => (
                    <td key={n} className="faint mono" style={{ fontSize: 11, maxWidth: 140 }} data-testid={`caps-${n}`}>
                      {caps[n] ? caps[n].join(' ') || 'none' : '—'}
                    </td>
                  ))}
                </tr>
                {rows.length === 0 && <tr><td colSpan={names.length + 1} className="empty">No tools listed.</td></tr>}
                {rows.map((t) => (
                  <tr key={t}>
                    <td className="mono">{t}</td>
                    {names.map((n) => {
                      const v = servers[n];
                      const qd = v?.quarantined.find((x) => x.name === t);
                      const has = v?.tools.includes(t);
                      const isSel = sel?.tool === t && sel.server === n;
                      return (
                        <td
                          key={n}
                          className={`cell ${has ? 'has' : ''} ${qd ? 'q' : ''} ${isSel ? 'sel' : ''}`}
                          title={qd ? `quarantined: ${qd.error}` : has ? 'listed' : ''}
                          onClick={() => (has || qd) && setSel({ tool: t, server: n })}
                          data-testid={qd ? `q-${n}-${t}` : undefined}
                        >
                          {qd ? '⚠' : has ? '●' : ''}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Panel>
        <Separator className="sep" />
        <Panel minSize="25">
          <Group orientation="vertical">
            <Panel defaultSize="60" minSize="20">
              <div className="pane scroll pad col" data-testid="tool-detail">
                {!sel && <div className="empty">Select a tool in the matrix (j/k to move).</div>}
                {sel && (
                  <>
                    <div className="row"><span className="mono" style={{ fontWeight: 600 }}>{sel.tool}</span><span className="tag">{sel.server}</span>{qerr && <span className="pill st-failed">quarantined</span>}</div>
                    {qerr && <div className="errline" data-testid="quarantine-error">{qerr.error}</div>}
                    {tool?.title && <div>{tool.title}</div>}
                    {tool?.description && <div className="muted">{tool.description}</div>}
                    {tool && (
                      <>
                        <div className="k faint" style={{ fontSize: 11, textTransform: 'uppercase' }}>Input schema</div>
                        <SchemaTree schema={tool.inputSchema} />
                        {tool.outputSchema !== undefined && tool.outputSchema !== null && (
                          <>
                            <div className="k faint" style={{ fontSize: 11, textTransform: 'uppercase' }}>Output schema</div>
                            <SchemaTree schema={tool.outputSchema} />
                          </>
                        )}
                        {tool.annotations && <div className="row wrap">{Object.entries(tool.annotations).map(([k, v]) => <span key={k} className="tag">{k}: {String(v)}</span>)}</div>}
                      </>
                    )}
                    {typeof cat === 'string' && <div className="errline">{cat}</div>}
                  </>
                )}
              </div>
            </Panel>
            <Separator className="sep" />
            <Panel minSize="15">
              <div className="pane scroll pad col">
                <section className="section">
                  <h2>Servers, labels and states</h2>
                  <table className="grid"><tbody>
                    {names.map((n) => (
                      <tr key={n}><td className="mono">{n}</td><td><span className={`pill st-${servers[n]?.state}`}>{servers[n]?.state}</span></td><td className="muted">{servers[n]?.reason}</td><td>{servers[n]?.labels.map((l) => <span key={l} className="tag">{l}</span>)}</td></tr>
                    ))}
                  </tbody></table>
                </section>
                <section className="section" data-testid="quarantine">
                  <h2>Quarantined tools</h2>
                  <table className="grid"><tbody>
                    {quarantined.length === 0 && <tr><td className="empty">None.</td></tr>}
                    {quarantined.map((x) => (
                      <tr key={`${x.server}/${x.name}`}><td className="mono">{x.server}</td><td className="mono">{x.name}</td><td className="bad">{x.error}</td></tr>
                    ))}
                  </tbody></table>
                </section>
                <section className="section" data-testid="catalog-changes">
                  <h2>Catalog changes (live)</h2>
                  <table className="grid"><tbody>
                    {changes.length === 0 && <tr><td className="empty">No catalog changed since the panel opened.</td></tr>}
                    {changes.map((c, i) => (
                      <tr key={i}><td className="mono muted nowrap">{clock(c.at_ms)}</td><td className="mono">{c.server}</td><td><DiffLines d={c.diff} /></td></tr>
                    ))}
                  </tbody></table>
                </section>
              </div>
            </Panel>
          </Group>
        </Panel>
      </Group>
    </div>
  );
}
