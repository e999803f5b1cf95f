import { afterEach, describe, expect, it } from 'vitest';
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { App } from './App';
import { applySnapshot } from './store/app';
import { keyAction } from './lib/nav';

describe('App shell', () => {
  // No router in unit tests: every API call fails the way an unreachable router's would.
  globalThis.fetch = (() => Promise.reject(new Error('no router in unit tests'))) as typeof fetch;
  afterEach(cleanup);

  it('maps keys to actions', () => {
    expect(keyAction('j')).toBe('down');
    expect(keyAction('ArrowUp')).toBe('up');
    expect(keyAction('/')).toBe('filter');
    expect(keyAction('6')).toEqual({ view: 5 });
    expect(keyAction('x')).toBeNull();
  });

  it('switches views with number keys and focuses the filter with /', () => {
    render(<App />);
    expect(screen.getByTestId('view-overview')).toBeTruthy();
    fireEvent.keyDown(window, { key: '6' });
    expect(screen.getByTestId('view-frames')).toBeTruthy();
    fireEvent.keyDown(window, { key: '/' });
    expect(document.activeElement).toBe(screen.getByTestId('frame-filter'));
  });

  it('shows unavailable servers in red on the nav and the overview', () => {
    act(() =>
      applySnapshot({
        servers: [
          { name: 'a', state: 'ready', reason: 'ok', tools: [], quarantined: [], status: {} },
          { name: 'b', state: 'unavailable', reason: 'crash loop', tools: [], quarantined: [], status: {} },
        ] as never,
        handshakes: [],
        traces: [],
        frames: [],
        runs: [],
        sessions: null,
        overview: null as never,
      }),
    );
    render(<App />);
    fireEvent.keyDown(window, { key: '1' });
    expect(screen.getByTestId('card-unavailable').className).toContain('red');
    expect(screen.getByTestId('ov-server-b').textContent).toContain('unavailable');
  });
});
