/** A sequence diagram (SVG) of client ↔ router ↔ upstream messages. */
import type { SeqMsg } from '../lib/handshake';

const X = [90, 330, 570];
const ROW = 34;
const TOP = 44;

export function Sequence({ msgs, names }: { msgs: SeqMsg[]; names: [string, string, string] }) {
  const h = TOP + msgs.length * ROW + 20;
  const t0 = msgs[0]?.at_ms ?? 0;
  return (
    <svg className="seq" width={660} height={h} role="img" aria-label="handshake sequence" data-testid="sequence">
      <defs>
        <marker id="arr" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M0,0 L10,5 L0,10 z" fill="currentColor" />
        </marker>
      </defs>
      {names.map((n, i) => (
        <g key={i} className="actor">
          <rect x={(X[i] ?? 0) - 70} y={6} width={140} height={24} rx={4} />
          <text x={X[i]} y={22} textAnchor="middle" fontWeight={600}>{n.length > 20 ? n.slice(0, 19) + '…' : n}</text>
          <line className="life" x1={X[i]} x2={X[i]} y1={30} y2={h - 6} />
        </g>
      ))}
      {msgs.map((m, i) => {
        const y = TOP + i * ROW + 14;
        const x1 = X[m.from] ?? 0;
        const x2 = X[m.to] ?? 0;
        const dt = m.at_ms - t0;
        if (m.kind === 'note' || m.from === m.to) {
          return (
            <g key={i}>
              <rect x={x1 - 80} y={y - 12} width={160} height={20} rx={3} fill="var(--bg3)" stroke="var(--line2)" />
              <text className="note" x={x1} y={y + 2} textAnchor="middle">{m.label}</text>
            </g>
          );
        }
        const left = Math.min(x1, x2);
        return (
          <g key={i} className={`msg ${m.kind}`} style={{ color: m.kind === 'fail' ? 'var(--bad)' : m.kind === 'resp' ? 'var(--ok)' : 'var(--accent)' }}>
            <line x1={x1} x2={x2 + (x2 > x1 ? -2 : 2)} y1={y} y2={y} markerEnd="url(#arr)" />
            <text x={left + Math.abs(x2 - x1) / 2} y={y - 5} textAnchor="middle">{m.label}</text>
            {m.note && <text className="note" x={left + Math.abs(x2 - x1) / 2} y={y + 13} textAnchor="middle">{m.note.length > 44 ? m.note.slice(0, 43) + '…' : m.note}</text>}
            <text className="note" x={4} y={y + 4}>{dt >= 0 ? `+${dt.toFixed(0)} ms` : ''}</text>
          </g>
        );
      })}
    </svg>
  );
}
