/**
 * The admin token: `serve` prints the panel URL with `#token=…`; on load the token moves to
 * sessionStorage (it survives reloads of this tab, not other tabs) and the fragment is cleared,
 * so it stays out of history, bookmarks and screenshots.
 */
const KEY = 'switchboard.token';

/** Reads the token from the fragment (moving it to storage) or from storage. */
export function takeToken(loc: Location = location, store: Storage = sessionStorage): string | null {
  const m = /(?:^#|&)token=([^&]+)/.exec(loc.hash);
  if (m?.[1]) {
    const token = decodeURIComponent(m[1]);
    store.setItem(KEY, token);
    const rest = loc.hash.replace(/(?:^#|&)token=[^&]+/, '').replace(/^&/, '');
    history.replaceState(null, '', loc.pathname + loc.search + (rest ? `#${rest}` : ''));
    return token;
  }
  return store.getItem(KEY);
}
