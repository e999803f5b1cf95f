/** The live calls chart (uPlot): calls/s and errors/s on the left axis, p50/p99 ms on the right. */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import { metrics } from '../store/app';

function css(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

export function LiveChart({ height = 180 }: { height?: number }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    // No 2D canvas (a DOM without one, e.g. unit tests): nothing to draw on.
    if (!el || !document.createElement('canvas').getContext('2d')) return;
    const axis = { stroke: css('--fg2'), grid: { stroke: css('--line'), width: 1 }, ticks: { stroke: css('--line') } };
    const opts: uPlot.Options = {
      width: el.clientWidth || 600,
      height,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, ms: { auto: true } },
      axes: [
        { ...axis },
        { ...axis, label: 'calls/s', size: 44 },
        { ...axis, scale: 'ms', side: 1, label: 'ms', size: 50, grid: { show: false } },
      ],
      series: [
        {},
        { label: 'calls/s', stroke: css('--accent'), width: 1.5, fill: css('--accent-bg') },
        { label: 'errors/s', stroke: css('--bad'), width: 1.5 },
        { label: 'p50 ms', stroke: css('--ok'), width: 1.2, scale: 'ms', spanGaps: true },
        { label: 'p99 ms', stroke: css('--warn'), width: 1.2, scale: 'ms', spanGaps: true },
      ],
    };
    const plot = new uPlot(opts, metrics.series(Math.floor(Date.now() / 1000)) as uPlot.AlignedData, el);
    const tick = setInterval(() => plot.setData(metrics.series(Math.floor(Date.now() / 1000)) as uPlot.AlignedData), 1000);
    const ro = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height }));
    ro.observe(el);
    return () => {
      clearInterval(tick);
      ro.disconnect();
      plot.destroy();
    };
  }, [height]);
  return <div ref={host} data-testid="live-chart" />;
}
