/**
 * Diagnosis: drop an image on the page (or pick one) → upload (`POST /api/blobs`) → run
 * (`POST /api/runs` with the equipment) → the flow graph with live node states and durations
 * from `flow_progress` events; the thermal image with the hotspot outlined and the hottest
 * pixel marked; severity band, knowledge hits, repair steps; run history that reopens any run.
 */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Group, Panel, Separator } from 'react-resizable-panels';
import { setRuns, useApp } from '../store/app';
import { api } from '../api/client';
import { IMAGE_ACCEPT, pickImage } from '../platform';
import { FlowGraph, type NodeView } from '../components/FlowGraph';
import { ThermalView } from '../components/ThermalView';
import { nodeStatus, structured, visionFigures } from '../lib/thermal';
import { useListNav } from '../lib/useListNav';
import { ago, duration } from '../lib/format';
import type { FlowGraph as Graph, RunView, ThermalView as Thermal } from '../api/types';

export const EQUIPMENT = ['panel', 'board', 'motor-bearing', 'pv-module', 'transformer', 'building-envelope', 'other', 'unknown'] as const;

const FALLBACK_FLOW: Graph = {
  name: 'thermal-diagnosis',
  description: null,
  nodes: [
    { id: 'vision', tool: 'analyze_thermal_image', capability: null, resolved_tool: null, description: null, timeout_ms: null },
    { id: 'knowledge', tool: 'search_manual', capability: null, resolved_tool: null, description: null, timeout_ms: null },
    { id: 'reasoning', tool: 'generate_repair_steps', capability: null, resolved_tool: null, description: null, timeout_ms: null },
  ],
  edges: [{ from: 'vision', to: 'knowledge', when: null }, { from: 'knowledge', to: 'reasoning', when: null }],
};

function imageOf(r: { image?: string | null; input?: Record<string, unknown> }): unknown {
  return r.image ?? r.input?.image;
}

function shaOf(image: unknown): string | null {
  return typeof image === 'string' && image.startsWith('blob:') ? image.slice(5) : null;
}

const finished = (d: RunView | null) => !!d && d.run.finished_at_ms !== null && d.run.outcome !== 'running';

export function Diagnosis() {
  const runs = useApp((s) => s.runs);
  const progress = useApp((s) => s.flow);
  const runsVersion = useApp((s) => s.runsVersion);
  const [graph, setGraph] = useState<Graph | null>(null);
  const [graphErr, setGraphErr] = useState<string | null>(null);
  const [equipment, setEquipment] = useState<string>('panel');
  const [ambient, setAmbient] = useState('');
  const [context, setContext] = useState('');
  const [phase, setPhase] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [runId, setRunId] = useState<string | null>(null);
  const [detail, setDetail] = useState<RunView | null>(null);
  const [sha, setSha] = useState<string | null>(null);
  const [thermal, setThermal] = useState<Thermal | null>(null);
  const [thermalErr, setThermalErr] = useState<string | null>(null);
  const [over, setOver] = useState(false);
  const [sel, setSel] = useState(-1);

  const loadRuns = useCallback(() => api.runs(50).then(setRuns, () => undefined), []);
  useEffect(() => {
    api.flow().then(setGraph, (e: Error) => {
      setGraphErr(e.message);
      setGraph(FALLBACK_FLOW);
    });
  }, []);
  useEffect(() => {
    loadRuns();
  }, [loadRuns, runsVersion]);

  // The selected run's record: polled while it runs, refetched when its nodes settle.
  const live = runId ? progress[runId] : undefined;
  const settledCount = live ? Object.values(live).filter((p) => nodeStatus(p.status) !== 'running').length : 0;
  useEffect(() => {
    if (!runId) return;
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const poll = async () => {
      try {
        const d = await api.run(runId);
        if (stop) return;
        setDetail(d);
        if (finished(d)) {
          loadRuns();
          return;
        }
      } catch {
        // not stored yet: keep polling
      }
      if (!stop) timer = setTimeout(poll, 1000);
    };
    poll();
    return () => {
      stop = true;
      if (timer) clearTimeout(timer);
    };
  }, [runId, settledCount, loadRuns]);

  // The thermal frame of the selected run's image.
  useEffect(() => {
    setThermal(null);
    setThermalErr(null);
    if (!sha) return;
    let live = true;
    api.thermal(sha).then(
      (t) => live && setThermal(t),
      (e: Error) => live && setThermalErr(e.message),
    );
    return () => {
      live = false;
    };
  }, [sha]);

  const start = useCallback(
    async (file: File) => {
      setError(null);
      setDetail(null);
      setRunId(null);
      setPhase(`uploading ${file.name}`);
      try {
        const blob = await api.uploadBlob(file);
        setSha(blob.sha256);
        setPhase(`starting a run on ${file.name}`);
        const amb = Number.parseFloat(ambient);
        const { run_id } = await api.startRun({
          image: blob.ref,
          equipment,
          ...(Number.isFinite(amb) ? { ambient_c: amb } : {}),
          ...(context.trim() ? { context: context.trim() } : {}),
        });
        setRunId(run_id);
        setPhase(`running ${file.name}`);
        loadRuns();
      } catch (e) {
        setError((e as Error).message);
        setPhase(null);
      }
    },
    [ambient, context, equipment, loadRuns],
  );

  // Drop anywhere on the page while this view is open.
  useEffect(() => {
    const onOver = (e: DragEvent) => {
      if (!e.dataTransfer?.types.includes('Files')) return;
      e.preventDefault();
      setOver(true);
    };
    const onLeave = (e: DragEvent) => {
      if (e.relatedTarget === null) setOver(false);
    };
    const onDrop = (e: DragEvent) => {
      e.preventDefault();
      setOver(false);
      const f = e.dataTransfer?.files?.[0];
      if (f) start(f);
    };
    window.addEventListener('dragover', onOver);
    window.addEventListener('dragleave', onLeave);
    window.addEventListener('drop', onDrop);
    return () => {
      window.removeEventListener('dragover', onOver);
      window.removeEventListener('dragleave', onLeave);
      window.removeEventListener('drop', onDrop);
    };
  }, [start]);

  const open = (i: number) => {
    const r = runs[i];
    if (!r) return;
    setSel(i);
    setError(null);
    setPhase(null);
    setDetail(null);
    setRunId(r.run_id);
    setSha(shaOf(imageOf(r)));
  };
  useListNav(runs.length, sel, setSel, open);

  const views = useMemo(() => {
    const out: Record<string, NodeView> = {};
    const g = graph ?? FALLBACK_FLOW;
    for (const n of g.nodes) {
      const stored = detail?.nodes.find((x) => x.node === n.id);
      const p = live?.[n.id];
      const useStored = stored && (finished(detail) || !p || nodeStatus(stored.status) !== 'pending');
      out[n.id] = useStored
        ? { status: nodeStatus(stored.status), duration_ms: stored.duration_ms, message: stored.error ?? null }
        : p
          ? { status: nodeStatus(p.status), duration_ms: p.elapsed_ms, message: p.message }
          : { status: 'pending', duration_ms: null, message: null };
    }
    return out;
  }, [graph, detail, live]);

  const out = (id: string) => detail?.nodes.find((n) => n.node === id)?.output;
  // The router's own reading of the node outputs (`result`) when it gives one, else ours.
  const res = detail?.result ?? null;
  const parsed = visionFigures(out('vision'));
  const vision = res
    ? {
        width: res.width ?? parsed?.width ?? null,
        height: res.height ?? parsed?.height ?? null,
        hotspot: res.hotspot?.bbox ?? parsed?.hotspot ?? null,
        hottest: res.hottest ?? res.hotspot?.hottest ?? parsed?.hottest ?? null,
        maxC: res.max_c ?? null,
        deltaRef: res.delta_t_ref_c ?? null,
        band: res.severity?.band ?? null,
        klass: res.severity?.class ?? null,
        criterion: res.severity?.criterion ?? null,
        action: res.severity?.action ?? null,
        equipment: res.equipment ?? null,
        component: parsed?.component ?? null,
        failureMode: res.failure_mode?.kind ?? null,
        hypothesis: res.failure_mode?.hypothesis ?? null,
      }
    : parsed;
  const knowledge = res
    ? { results: res.knowledge }
    : (structured(out('knowledge')) as { results?: { id: string; title: string; score: number }[] } | null);
  const plan = res
    ? res.repair ?? null
    : (structured(out('reasoning')) as { summary?: string; steps?: string[]; safety?: string[]; parts?: string[] } | null);
  const band = vision?.band ?? vision?.klass ?? null;
  const runError = detail?.run.error ?? null;

  return (
    <div className="view" data-testid="view-diagnosis">
      {over && <div className="dropveil">Drop the thermal image to diagnose it</div>}
      <div className="viewhead">
        <h1>Diagnosis</h1>
        <span className="muted">{graph?.name ?? 'thermal-diagnosis'}{graphErr ? ` (flow not served: ${graphErr})` : ''}</span>
        <span className="grow" />
        <label className="row">
          <span className="muted">equipment</span>
          <select className="field" value={equipment} onChange={(e) => setEquipment(e.target.value)} data-testid="equipment">
            {EQUIPMENT.map((q) => <option key={q} value={q}>{q}</option>)}
          </select>
        </label>
        <input className="field" style={{ width: 100 }} placeholder="ambient °C" value={ambient} onChange={(e) => setAmbient(e.target.value)} aria-label="ambient temperature" />
        <input className="field" style={{ width: 200 }} placeholder="context (load, notes)" value={context} onChange={(e) => setContext(e.target.value)} aria-label="context" />
        <button className="btn primary" onClick={async () => { try { const f = await pickImage(); if (f) start(f); } catch (e) { setError(String(e)); } }} data-testid="pick-image">Pick image…</button>
        <input type="file" accept={IMAGE_ACCEPT} data-testid="file-input" style={{ display: 'none' }} onChange={(e) => { const f = e.target.files?.[0]; if (f) start(f); e.target.value = ''; }} />
      </div>
      <Group orientation="horizontal" style={{ flex: 1, minHeight: 0 }}>
        <Panel defaultSize="26" minSize="16">
          <div className="pane scroll pad col">
            <div className={`drop ${over ? 'over' : ''}`} data-testid="dropzone">
              Drop a thermal image anywhere on this page<br />
              <span className="faint">FLIR radiometric JPEG, FFF, DJI R-JPEG, or a plain JPEG/PNG</span>
            </div>
            {phase && !finished(detail) && <div className="muted" data-testid="phase">{phase}</div>}
            {error && <div className="errline" data-testid="run-error">{error}</div>}
            <section className="section">
              <h2>Run history</h2>
              <table className="grid" data-testid="run-history">
                <tbody>
                  {runs.length === 0 && <tr><td className="empty">No runs yet.</td></tr>}
                  {runs.map((r, i) => (
                    <tr key={r.run_id} className={`click ${r.run_id === runId ? 'sel' : ''}`} onClick={() => open(i)} data-outcome={r.outcome}>
                      <td><span className={`pill st-${r.outcome === 'ok' ? 'done' : r.outcome}`}>{r.outcome}</span></td>
                      <td className="mono ellipsis" style={{ maxWidth: 120 }} title={r.run_id}>{r.run_id}</td>
                      <td className="muted nowrap">{r.equipment ?? ''}</td>
                      <td className="muted nowrap">{ago(r.started_at_ms)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          </div>
        </Panel>
        <Separator className="sep" />
        <Panel minSize="40">
          <div className="pane scroll pad col">
            <section className="section">
              <h2>Flow {runId && <span className="mono faint">{runId}</span>} {detail && <span className={`pill st-${detail.run.outcome === 'ok' ? 'done' : detail.run.outcome}`} data-testid="run-outcome">{detail.run.outcome}</span>} {detail?.run.finished_at_ms ? <span className="faint">{duration(detail.run.finished_at_ms - detail.run.started_at_ms)}</span> : null}</h2>
              <FlowGraph graph={graph ?? FALLBACK_FLOW} views={views} />
              {runError && <div className="body errline" data-testid="run-failure">{runError}</div>}
            </section>
            <div style={{ display: 'grid', gridTemplateColumns: 'minmax(320px, auto) minmax(280px, 1fr)', gap: 12, alignItems: 'start' }}>
              <section className="section">
                <h2>Thermal image</h2>
                <div className="body">
                  {!sha && <div className="empty">Drop or pick an image, or open a run from the history.</div>}
                  {thermalErr && <div className="errline" data-testid="thermal-error">The image could not be read: {thermalErr}</div>}
                  {thermal && (
                    <ThermalView
                      data={thermal}
                      hotspot={vision?.hotspot ?? null}
                      hottest={vision?.hottest ?? null}
                      reportSize={vision?.width && vision.height ? { width: vision.width, height: vision.height } : null}
                    />
                  )}
                  {sha && !thermal && !thermalErr && <div className="muted">reading the image…</div>}
                </div>
              </section>
              <div className="col">
                <section className="section">
                  <h2>Severity</h2>
                  <div className="body col">
                    {vision ? (
                      <>
                        <div className="row">
                          <span className={`sevband sev-${band ?? 'ungraded'}`} data-testid="severity">{band ?? 'not graded'}</span>
                          {vision.maxC !== null && <span className="mono">max {vision.maxC.toFixed(1)} °C</span>}
                          {vision.deltaRef !== null && <span className="mono">ΔT {vision.deltaRef.toFixed(1)} °C</span>}
                        </div>
                        {vision.criterion && <div className="muted">{vision.criterion}</div>}
                        {vision.action && <div>{vision.action}</div>}
                        <dl className="kv">
                          <dt>equipment</dt><dd>{vision.equipment ?? '—'}</dd>
                          <dt>component</dt><dd>{vision.component ?? '—'}</dd>
                          <dt>failure mode</dt><dd>{vision.failureMode ?? '—'}</dd>
                        </dl>
                        {vision.hypothesis && <div className="muted">{vision.hypothesis}</div>}
                      </>
                    ) : (
                      <span className="faint">{!runId ? '—' : finished(detail) ? `not graded: the run ${detail?.run.outcome ?? 'ended'}` : 'waiting for the vision node…'}</span>
                    )}
                  </div>
                </section>
                <section className="section">
                  <h2>Knowledge hits</h2>
                  <table className="grid" data-testid="knowledge">
                    <tbody>
                      {!knowledge?.results?.length && <tr><td className="faint">—</td></tr>}
                      {knowledge?.results?.map((h) => (
                        <tr key={h.id}><td className="mono">{h.id}</td><td>{h.title}</td><td className="num">{h.score.toFixed(2)}</td></tr>
                      ))}
                    </tbody>
                  </table>
                </section>
              </div>
            </div>
            <section className="section">
              <h2>Repair steps</h2>
              <div className="body col" data-testid="repair">
                {plan?.summary && <div>{plan.summary}</div>}
                {plan?.steps?.length ? <ol style={{ margin: 0, paddingLeft: 20 }}>{plan.steps.map((s, i) => <li key={i}>{s}</li>)}</ol> : <span className="faint">—</span>}
                {plan?.safety?.length ? <div className="warn">Safety: {plan.safety.join(' · ')}</div> : null}
                {plan?.parts?.length ? <div className="muted">Parts: {plan.parts.join(', ')}</div> : null}
              </div>
            </section>
          </div>
        </Panel>
      </Group>
    </div>
  );
}
