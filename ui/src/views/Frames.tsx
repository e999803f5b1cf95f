/**
 * Frames: the live log of both legs, interleaved or side by side. Selecting a frame highlights
 * the frames of the other leg with the same `correlation` (and its request/response pair); the
 * detail pane shows the body in a JSON viewer, SSE ids, WebSocket frame numbers and latency.
 */
import { useMemo, useState } from 'react';
import { Group, Panel, Separator } from 'react-resizable-panels';
import { JsonView, darkStyles, defaultStyles } from 'react-json-view-lite';
import { clearFrames, correlated, correlatedCount, currentFilter, framesAsJsonLines, ring, setPaused, setQuery, useFrames, visibleSeqs } from '../store/frames';
import { FrameList, summary } from '../components/FrameList';
import { useListNav } from '../lib/useListNav';
import { api } from '../api/client';
import { saveText } from '../platform';
import { clock, duration, num } from '../lib/format';
import { effectiveTheme, loadTheme } from '../lib/theme';

/** Linked frames listed in the detail pane (the rest counted). */
const LINKED_SHOWN = 50;

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

export function Frames() {
  const { version, received, evicted, query, errors, paused } = useFrames();
  const [mode, setMode] = useState<'split' | 'interleaved'>('split');
  const [selected, setSelected] = useState<number | null>(null);
  const [exportErr, setExportErr] = useState<string | null>(null);
  const all = visibleSeqs();
  const down = visibleSeqs('downstream');
  const up = visibleSeqs('upstream');
  const row = selected !== null ? ring.bySeq(selected) : undefined;
  const corr = row?.f.correlation ?? null;
  // The selection's correlation from the store's correlation map (no ring scan); a long call
  // can link thousands of frames (one progress notification per step): the table shows the first
  // LINKED_SHOWN and says how many more.
  const linked = useMemo(() => (corr !== null ? correlated(corr, LINKED_SHOWN) : []), [corr, version]);
  const linkedTotal = corr !== null ? correlatedCount(corr) : 0;

  const navSeqs = mode === 'interleaved' ? all : row?.f.leg === 'upstream' ? up : down;
  const navIndex = selected !== null ? navSeqs.indexOf(selected) : -1;
  useListNav(navSeqs.length, navIndex, (i) => {
    const s = navSeqs[i];
    if (s !== undefined) setSelected(s);
  });

  const exportRouter = async () => {
    setExportErr(null);
    const f = currentFilter();
    const leg = f.terms.find((t) => t.key === 'leg' && !t.negate)?.value;
    const server = f.terms.find((t) => t.key === 'server' && !t.negate)?.value;
    try {
      const text = await api.exportFrames({ leg, server });
      saveText(`switchboard-frames-${Date.now()}.jsonl`, text);
    } catch (e) {
      setExportErr((e as Error).message);
    }
  };

  const body = useMemo(() => (row ? parse(row.f.body) : undefined), [row]);
  const dark = effectiveTheme(loadTheme()) === 'dark';
  // The JSON viewer is rebuilt only when the selection changes, not on every view update.
  const jsonView = useMemo(
    () =>
      body !== undefined && typeof body === 'object' && body !== null ? (
        <JsonView data={body as object} shouldExpandNode={(level) => level < 4} style={dark ? darkStyles : defaultStyles} />
      ) : null,
    [body, dark],
  );
  const listProps = { version, selected, linkedCorrelation: corr, linkedSeq: row?.pairSeq ?? null, onSelect: setSelected };

  return (
    <div className="view" data-testid="view-frames">
      <div className="viewhead">
        <h1>Frames</h1>
        <input
          className="field filterbox"
          data-filter
          data-testid="frame-filter"
          placeholder='/ filter: server:everything method:tools/call dir:in leg:upstream kind:error -method:ping "text"'
          value={query}
          onChange={(e) => setQuery(e.target.value)}
        />
        <span className="muted nowrap" data-testid="frame-counts">
          {num(all.length)} shown · {num(received)} received{evicted ? ` · ${num(evicted)} dropped from the page` : ''}
        </span>
        <span className="grow" />
        <button className={`btn small ${paused ? 'on' : ''}`} onClick={() => setPaused(!paused)} data-testid="pause">{paused ? '▶ resume' : '❚❚ pause'}</button>
        <button className="btn small" onClick={() => setMode(mode === 'split' ? 'interleaved' : 'split')} data-testid="layout">{mode === 'split' ? 'interleave' : 'side by side'}</button>
        <button className="btn small" onClick={() => { clearFrames(); setSelected(null); }}>clear</button>
        <button className="btn small" onClick={exportRouter} title="GET /api/frames/export (the router's frame ring, leg/server from the filter)">export</button>
        <button className="btn small" onClick={() => saveText(`switchboard-page-frames-${Date.now()}.jsonl`, framesAsJsonLines())} title="the frames held in this page, as JSON lines">export page</button>
      </div>
      {(errors.length > 0 || exportErr) && <div className="banner warn">{[...errors, exportErr].filter(Boolean).join(' · ')}</div>}
      {paused && <div className="banner warn">Paused: frames keep arriving ({num(received)} so far) and show when you resume.</div>}
      <Group orientation="horizontal" style={{ flex: 1, minHeight: 0 }}>
        <Panel defaultSize="70" minSize="30">
          {mode === 'interleaved' ? (
            <FrameList {...listProps} seqs={all} interleaved testid="frames-all" />
          ) : (
            <Group orientation="horizontal">
              <Panel defaultSize="50" minSize="20">
                <div className="pane">
                  <div className="legtitle"><span className="leg-downstream">client ↔ router</span><span className="faint">{num(down.length)}</span></div>
                  <FrameList {...listProps} seqs={down} interleaved={false} testid="frames-downstream" />
                </div>
              </Panel>
              <Separator className="sep" />
              <Panel minSize="20">
                <div className="pane">
                  <div className="legtitle"><span className="leg-upstream">router ↔ upstream</span><span className="faint">{num(up.length)}</span></div>
                  <FrameList {...listProps} seqs={up} interleaved={false} testid="frames-upstream" />
                </div>
              </Panel>
            </Group>
          )}
        </Panel>
        <Separator className="sep" />
        <Panel minSize="20">
          <div className="pane scroll pad col" data-testid="frame-detail">
            {!row && <div className="empty">Select a frame (j/k to move). Frames of the other leg with the same correlation light up.</div>}
            {row && (
              <>
                <div className="row wrap">
                  <span className="mono" style={{ fontWeight: 600 }}>{summary(row)}</span>
                  <span className="tag">{row.f.leg}</span>
                  <span className="tag">{row.f.transport}</span>
                  <span className="tag">{row.f.direction === 'out' ? 'router → ' + row.f.peer : row.f.peer + ' → router'}</span>
                </div>
                <dl className="kv">
                  <dt>time</dt><dd>{clock(row.f.at_us / 1000)}</dd>
                  <dt>kind</dt><dd>{row.f.kind}</dd>
                  <dt>method</dt><dd>{row.f.method ?? '—'}</dd>
                  <dt>id</dt><dd>{row.f.id !== null ? String(row.f.id) : '—'}</dd>
                  <dt>correlation</dt><dd data-testid="detail-corr">{row.f.correlation ?? '— (outside a forwarded request)'}</dd>
                  <dt>SSE event id</dt><dd>{row.f.sse_id ?? '—'}</dd>
                  <dt>WS frame</dt><dd>{row.f.ws_frame ?? '—'}</dd>
                  <dt>size</dt><dd>{row.f.size} B</dd>
                  <dt>latency</dt><dd data-testid="detail-latency">{row.latencyUs !== undefined ? `${duration(row.latencyUs / 1000)} (request → response)` : '—'}</dd>
                </dl>
                {linked.length > 1 && (
                  <section className="section" data-testid="linked">
                    <h2>Linked frames (correlation {corr}){linkedTotal > linked.length ? ` · first ${linked.length} of ${num(linkedTotal)}` : ''}</h2>
                    <table className="grid">
                      <colgroup>
                        <col style={{ width: 108 }} />
                        <col style={{ width: 82 }} />
                        <col style={{ width: 20 }} />
                        <col style={{ width: '24%' }} />
                        <col />
                      </colgroup>
                      <tbody>
                      {linked.map((l) => (
                        <tr key={l.seq} className={`click ${l.seq === selected ? 'sel' : ''}`} onClick={() => setSelected(l.seq)}>
                          <td className="mono muted">{clock(l.f.at_us / 1000)}</td>
                          <td className={`leg-${l.f.leg}`}>{l.f.leg}</td>
                          <td>{l.f.direction === 'out' ? '→' : '←'}</td>
                          <td className="mono ellipsis" title={l.f.peer}>{l.f.peer}</td>
                          <td className="mono ellipsis" title={summary(l)}>{summary(l)}</td>
                        </tr>
                      ))}
                    </tbody></table>
                  </section>
                )}
                <div className="json">{jsonView}</div>
                <pre className="raw" data-testid="raw-body">{row.f.body}</pre>
              </>
            )}
          </div>
        </Panel>
      </Group>
    </div>
  );
}
