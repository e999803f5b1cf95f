/** The thermal image on a canvas (iron palette), the hotspot outlined, the hottest pixel marked, a scale, the temperature under the pointer. */
import { useEffect, useMemo, useRef, useState } from 'react';
import { decodeTemps, iron, toRgba, type Box } from '../lib/thermal';
import type { ThermalView as Thermal } from '../api/types';

const MAX_W = 560;

export function ThermalView({ data, hotspot, hottest: hottestIn, reportSize }: { data: Thermal; hotspot: Box | null; hottest: { x: number; y: number } | null; reportSize: { width: number; height: number } | null }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  // The report's hottest pixel, else the reader's (on the thermal grid itself).
  const hottest = hottestIn ?? (data.hottest && !reportSize ? data.hottest : null);
  const scaleRef = useRef<HTMLCanvasElement>(null);
  const [hover, setHover] = useState<{ x: number; y: number; t: number } | null>(null);
  const temps = useMemo(() => {
    try {
      return decodeTemps(data.temps, data.width, data.height);
    } catch (e) {
      return e as Error;
    }
  }, [data]);
  const lo = data.min ?? data.min_c ?? 0;
  const hi = data.max ?? data.max_c ?? 1;
  const zoom = Math.max(1, Math.floor(MAX_W / data.width)) || 1;
  const cssW = Math.min(MAX_W, data.width * zoom);
  const k = cssW / data.width;
  // The report's coordinates are on its own grid; map them onto the thermal frame.
  const sx = reportSize ? data.width / reportSize.width : 1;
  const sy = reportSize ? data.height / reportSize.height : 1;

  useEffect(() => {
    const c = canvas.current;
    if (!c || temps instanceof Error) return;
    c.width = data.width;
    c.height = data.height;
    const ctx = c.getContext('2d');
    if (!ctx) return;
    ctx.putImageData(new ImageData(toRgba(temps, lo, hi) as Uint8ClampedArray<ArrayBuffer>, data.width, data.height), 0, 0);
    const s = scaleRef.current;
    const sctx = s?.getContext('2d');
    if (s && sctx) {
      s.width = 1;
      s.height = 256;
      const img = sctx.createImageData(1, 256);
      for (let i = 0; i < 256; i++) {
        const [r, g, b] = iron(1 - i / 255);
        img.data.set([r, g, b, 255], i * 4);
      }
      sctx.putImageData(img, 0, 0);
    }
  }, [temps, data, lo, hi]);

  if (temps instanceof Error) return <div className="errline">{temps.message}</div>;
  const cssH = data.height * k;
  const onMove = (e: React.MouseEvent) => {
    const r = (e.currentTarget as HTMLElement).getBoundingClientRect();
    const x = Math.floor(((e.clientX - r.left) / r.width) * data.width);
    const y = Math.floor(((e.clientY - r.top) / r.height) * data.height);
    if (x < 0 || y < 0 || x >= data.width || y >= data.height) return setHover(null);
    setHover({ x, y, t: temps[y * data.width + x] ?? NaN });
  };
  const unit = data.radiometric ? '°C' : '(relative)';

  return (
    <div className="row" style={{ alignItems: 'stretch', gap: 12 }}>
      <div className="thermal" style={{ width: cssW, height: cssH }} onMouseMove={onMove} onMouseLeave={() => setHover(null)} data-testid="thermal">
        <canvas ref={canvas} style={{ width: cssW, height: cssH }} data-testid="thermal-canvas" />
        <svg width={cssW} height={cssH} style={{ position: 'absolute', inset: 0, pointerEvents: 'none' }}>
          {hotspot && (
            <rect
              data-testid="hotspot"
              x={hotspot.x * sx * k}
              y={hotspot.y * sy * k}
              width={Math.max(2, hotspot.width * sx * k)}
              height={Math.max(2, hotspot.height * sy * k)}
              fill="none"
              stroke="#00e5ff"
              strokeWidth={2}
              strokeDasharray="6 3"
            />
          )}
          {hottest && (
            <g data-testid="hottest" transform={`translate(${(hottest.x * sx + 0.5) * k}, ${(hottest.y * sy + 0.5) * k})`}>
              <circle r={7} fill="none" stroke="#fff" strokeWidth={2} />
              <line x1={-12} x2={12} y1={0} y2={0} stroke="#fff" strokeWidth={1.5} />
              <line y1={-12} y2={12} x1={0} x2={0} stroke="#fff" strokeWidth={1.5} />
            </g>
          )}
        </svg>
        <div className="mono" style={{ position: 'absolute', left: 6, bottom: 6, background: 'rgba(0,0,0,.65)', color: '#fff', padding: '1px 6px', borderRadius: 3 }} data-testid="pointer-temp">
          {hover ? `${Number.isFinite(hover.t) ? hover.t.toFixed(data.radiometric ? 1 : 3) : 'no value'} ${unit} at (${hover.x}, ${hover.y})` : `${data.width}×${data.height}${data.format ? ' ' + data.format : ''} — point at the image`}
        </div>
      </div>
      <div className="col" style={{ justifyContent: 'space-between', fontSize: 11 }} data-testid="scale">
        <span className="mono">{hi.toFixed(data.radiometric ? 1 : 2)} {data.radiometric ? '°C' : ''}</span>
        <canvas ref={scaleRef} className="scale" style={{ height: Math.max(120, cssH - 40), width: 14 }} />
        <span className="mono">{lo.toFixed(data.radiometric ? 1 : 2)} {data.radiometric ? '°C' : ''}</span>
      </div>
    </div>
  );
}
