/** The shell: navigation, connection state, lagged counts, theme toggle, global keys. */
import { useEffect, useState } from 'react';
import { useApp } from './store/app';
import { activeNav, isTyping, keyAction } from './lib/nav';
import { applyTheme, loadTheme, nextTheme, type Theme } from './lib/theme';
import { num } from './lib/format';
import { Overview } from './views/Overview';
import { Servers } from './views/Servers';
import { Handshakes } from './views/Handshakes';
import { Registry } from './views/Registry';
import { SessionsView } from './views/Sessions';
import { Frames } from './views/Frames';
import { Diagnosis } from './views/Diagnosis';

export const VIEWS = [
  { id: 'overview', label: 'Overview', C: Overview },
  { id: 'servers', label: 'Servers', C: Servers },
  { id: 'handshakes', label: 'Handshakes', C: Handshakes },
  { id: 'registry', label: 'Registry', C: Registry },
  { id: 'sessions', label: 'Sessions & affinity', C: SessionsView },
  { id: 'frames', label: 'Frames', C: Frames },
  { id: 'diagnosis', label: 'Diagnosis', C: Diagnosis },
] as const;

type ViewId = (typeof VIEWS)[number]['id'];

function viewFromHash(): ViewId {
  const id = location.hash.replace(/^#\/?/, '');
  return (VIEWS.find((v) => v.id === id)?.id ?? 'overview') as ViewId;
}

export function App() {
  const [view, setView] = useState<ViewId>(viewFromHash);
  const [theme, setTheme] = useState<Theme>(loadTheme);
  const conn = useApp((s) => s.conn);
  const lost = useApp((s) => s.lost);
  const unavailable = useApp((s) => Object.values(s.servers).filter((v) => v.state === 'unavailable').length);

  useEffect(() => {
    const onHash = () => setView(viewFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const go = (id: ViewId) => {
    history.replaceState(null, '', `#/${id}`);
    setView(id);
  };

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (isTyping(e.target)) {
        if (e.key === 'Escape') (e.target as HTMLElement).blur();
        return;
      }
      const a = keyAction(e.key);
      if (!a) return;
      if (a === 'filter') {
        const f = document.querySelector<HTMLInputElement>('[data-filter]');
        if (f) {
          e.preventDefault();
          f.focus();
          f.select();
        }
      } else if (a === 'down' || a === 'up') {
        const nav = activeNav();
        if (nav) {
          e.preventDefault();
          nav.move(a === 'down' ? 1 : -1);
        }
      } else if (a === 'open') {
        if ((e.target as HTMLElement)?.tagName === 'BUTTON') return;
        activeNav()?.open();
      } else {
        const v = VIEWS[a.view];
        if (v) go(v.id);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const Current = VIEWS.find((v) => v.id === view)?.C ?? Overview;

  return (
    <div className="shell">
      <header className="topbar">
        <div className="brand">
          <span className="brand-dot" />
          Switchboard
        </div>
        <span className={`pill st-${conn.status}`} data-testid="conn" title={conn.error ?? ''}>
          {conn.status === 'open' ? 'live' : conn.status === 'unauthorised' ? 'no token' : conn.status}
          {conn.status === 'closed' && conn.error ? `: ${conn.error}` : ''}
        </span>
        {lost.total > 0 && (
          <span className="pill st-degraded" data-testid="lagged" title="the router dropped events for this viewer because it fell behind; the data plane was not slowed">
            lagged: {num(lost.total)} events lost
          </span>
        )}
        <span className="grow" />
        <span className="faint mono">j/k move · Enter open · / filter · 1–7 views</span>
        <button
          className="btn small"
          data-testid="theme"
          title="Theme: follows the system unless you pick one"
          onClick={() => {
            const t = nextTheme(theme);
            applyTheme(t);
            setTheme(t);
          }}
        >
          theme: {theme}
        </button>
      </header>
      <nav className="nav" aria-label="Views">
        {VIEWS.map((v, i) => (
          <button key={v.id} aria-current={v.id === view ? 'page' : undefined} onClick={() => go(v.id)} data-view={v.id}>
            {v.label}
            {v.id === 'servers' && unavailable > 0 && <span className="pill st-unavailable nodot">{unavailable}</span>}
            <span className="key">{i + 1}</span>
          </button>
        ))}
        <span className="spacer" />
      </nav>
      <main className="main">
        {conn.status === 'unauthorised' && (
          <div className="banner">No admin token: open the panel with the URL `switchboard serve` printed (it ends with #token=…).</div>
        )}
        <Current />
      </main>
    </div>
  );
}
