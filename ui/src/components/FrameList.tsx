/** A virtualised list of frames (@tanstack/react-virtual) that follows the tail until scrolled up. */
import { memo, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { ring, type FrameRow } from '../store/frames';
import { clock, duration } from '../lib/format';

const ROW_H = 22;
const KIND = { request: 'req', response: 'res', notification: 'ntf', error: 'err' } as const;

export function summary(r: FrameRow): string {
  const f = r.f;
  const id = f.id !== null ? ` #${String(f.id)}` : '';
  if (f.kind === 'response') return `result${id}`;
  if (f.kind === 'error') {
    let msg = '';
    try {
      msg = (JSON.parse(f.body) as { error?: { message?: string } }).error?.message ?? '';
    } catch {
      // keep it short
    }
    return `error${id}${msg ? ': ' + msg : ''}`;
  }
  return `${f.method ?? f.kind}${id}`;
}

interface Props {
  seqs: readonly number[];
  version: number;
  interleaved: boolean;
  selected: number | null;
  linkedCorrelation: number | null;
  linkedSeq: number | null;
  onSelect: (seq: number) => void;
  testid: string;
}

/** Memoised: re-renders on a view update (`version`) or a selection change, not on count-only updates. */
export const FrameList = memo(function FrameList({ seqs, version, interleaved, selected, linkedCorrelation, linkedSeq, onSelect, testid }: Props) {
  const parent = useRef<HTMLDivElement>(null);
  const [follow, setFollow] = useState(true);
  const count = seqs.length;
  // Fixed-height rows, no per-row measuring; scroll updates are not flushed synchronously (a
  // storm's tail-follow would otherwise re-render the list inside every scroll event).
  const v = useVirtualizer({
    count,
    getScrollElement: () => parent.current,
    estimateSize: () => ROW_H,
    overscan: 10,
    useFlushSync: false,
  });

  // Following the tail: set scrollTop past the end (the browser clamps it) instead of
  // `scrollToIndex`, which reads the element's scroll height — a forced layout on every update.
  useLayoutEffect(() => {
    const el = parent.current;
    if (follow && el && count > 0) el.scrollTop = count * ROW_H;
  }, [version, follow, count]);

  // Keep the selected row in view when it moves by keyboard.
  useEffect(() => {
    if (selected === null) return;
    const i = seqs.indexOf(selected);
    if (i >= 0 && !follow) v.scrollToIndex(i, { align: 'auto' });
  }, [selected]); // eslint-disable-line react-hooks/exhaustive-deps

  const onScroll = () => {
    const el = parent.current;
    if (!el) return;
    // The content height is known (fixed rows): no scrollHeight read.
    const atBottom = count * ROW_H - el.scrollTop - el.clientHeight < ROW_H * 1.5;
    if (atBottom !== follow) setFollow(atBottom);
  };

  const cls = interleaved ? 'interleaved' : '';
  return (
    <div className="pane" style={{ position: 'relative' }}>
      <div className={`fhead ${cls}`}>
        <span>time</span>
        {interleaved && <span>leg</span>}
        <span />
        <span>kind</span>
        <span>peer</span>
        <span>message</span>
        <span>latency</span>
        {interleaved && <span>size</span>}
      </div>
      <div ref={parent} className="flist" onScroll={onScroll} data-testid={testid} data-count={count}>
        <div style={{ height: v.getTotalSize(), position: 'relative' }}>
          {v.getVirtualItems().map((it) => {
            const seq = seqs[it.index] as number;
            const r = ring.bySeq(seq);
            if (!r) {
              return <div key={it.key} className={`frow ${cls} faint`} style={{ top: it.start }}>evicted</div>;
            }
            const f = r.f;
            const linked =
              seq !== selected &&
              ((linkedCorrelation !== null && f.correlation === linkedCorrelation) || seq === linkedSeq || r.pairSeq === selected);
            return (
              <div
                key={it.key}
                className={`frow ${cls} k-${f.kind} ${seq === selected ? 'sel' : ''} ${linked ? 'linked' : ''}`}
                style={{ top: it.start }}
                onClick={() => onSelect(seq)}
                data-seq={seq}
                data-leg={f.leg}
                data-corr={f.correlation ?? ''}
              >
                <span className="faint">{clock(f.at_us / 1000)}</span>
                {interleaved && <span className={`leg-${f.leg}`}>{f.leg === 'downstream' ? 'client' : 'upstream'}</span>}
                <span className={`dir-${f.direction}`} title={f.direction === 'out' ? 'sent by the router' : 'received by the router'}>{f.direction === 'out' ? '→' : '←'}</span>
                <span title={f.kind}>{KIND[f.kind]}</span>
                <span title={f.peer}>{f.peer}</span>
                <span title={summary(r)}>
                  {summary(r)}
                  {f.sse_id !== null && <span className="tag" style={{ marginLeft: 6 }}>sse {f.sse_id}</span>}
                  {f.ws_frame !== null && <span className="tag" style={{ marginLeft: 6 }}>ws #{f.ws_frame}</span>}
                  {f.correlation !== null && <span className="faint" style={{ marginLeft: 6 }}>c{f.correlation}</span>}
                </span>
                <span className="faint">{r.latencyUs !== undefined && f.kind !== 'request' ? duration(r.latencyUs / 1000) : ''}</span>
                {interleaved && <span className="faint">{f.size}</span>}
              </div>
            );
          })}
        </div>
      </div>
      {!follow && (
        <button className="btn primary tailbtn" onClick={() => setFollow(true)} data-testid={`${testid}-tail`}>
          ↓ back to bottom
        </button>
      )}
    </div>
  );
});
