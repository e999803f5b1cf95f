import { describe, expect, it } from 'vitest';
import { decodeTemps, iron, nodeStatus, structured, toRgba, visionFigures } from './thermal';

function b64(values: number[]): string {
  const buf = new ArrayBuffer(values.length * 4);
  const dv = new DataView(buf);
  values.forEach((v, i) => dv.setFloat32(i * 4, v, true));
  let s = '';
  new Uint8Array(buf).forEach((b) => (s += String.fromCharCode(b)));
  return btoa(s);
}

describe('thermal', () => {
  it('decodes little-endian f32 temperatures', () => {
    const t = decodeTemps(b64([20.5, 21, 99.25, -3]), 2, 2);
    expect([...t]).toEqual([20.5, 21, 99.25, -3]);
  });

  it('refuses data that does not fit the size', () => {
    expect(() => decodeTemps(b64([1, 2, 3]), 2, 2)).toThrow(/expected 16/);
  });

  it('maps the ends of the iron palette to black and near-white', () => {
    expect(iron(0)).toEqual([0, 0, 0]);
    expect(iron(1)).toEqual([255, 255, 245]);
    expect(iron(5)).toEqual([255, 255, 245]);
    const mid = iron(0.55);
    expect(mid[0]).toBeGreaterThan(mid[2]);
  });

  it('renders RGBA with full alpha', () => {
    const px = toRgba(new Float32Array([0, 10]), 0, 10);
    expect([...px]).toEqual([0, 0, 0, 255, 255, 255, 245, 255]);
  });

  it('leaves pixels without a value transparent', () => {
    const px = toRgba(new Float32Array([NaN, 5]), 0, 10);
    expect(px[3]).toBe(0);
    expect(px[7]).toBe(255);
  });

  it('reads the vision report from a tool result', () => {
    const report = {
      image: { width: 320, height: 240 },
      hotspots: [{ bbox: { x: 10, y: 20, width: 30, height: 40 }, hottest: { x: 25, y: 30 } }],
      hottest: { x: 25, y: 30 },
      max_c: 200.1,
      severity: { band: 'major', class: null, assessed: true, criterion: 'ΔT 150', action: 'repair now' },
    };
    const f = visionFigures({ content: [], structuredContent: report });
    expect(f?.band).toBe('major');
    expect(f?.hotspot).toEqual({ x: 10, y: 20, width: 30, height: 40 });
    expect(f?.hottest).toEqual({ x: 25, y: 30 });
    expect(visionFigures(report)?.width).toBe(320);
    expect(structured({ content: [{ type: 'text', text: '{"a":1}' }] })).toEqual({ a: 1 });
  });

  it('maps progress and stored statuses to node states', () => {
    expect(nodeStatus('succeeded')).toBe('done');
    expect(nodeStatus('ok')).toBe('done');
    expect(nodeStatus('retrying')).toBe('running');
    expect(nodeStatus('failed')).toBe('failed');
    expect(nodeStatus('skipped')).toBe('skipped');
    expect(nodeStatus(undefined)).toBe('pending');
  });
});
