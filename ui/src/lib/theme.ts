/** Theme: follows prefers-color-scheme unless the operator picked light or dark (kept in localStorage). */
export type Theme = 'auto' | 'light' | 'dark';
const KEY = 'switchboard.theme';

export function loadTheme(): Theme {
  const t = localStorage.getItem(KEY);
  return t === 'light' || t === 'dark' ? t : 'auto';
}

export function applyTheme(t: Theme): void {
  if (t === 'auto') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', t);
  localStorage.setItem(KEY, t);
}

/** The theme in effect (auto resolved). */
export function effectiveTheme(t: Theme): 'light' | 'dark' {
  if (t !== 'auto') return t;
  return typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: light)').matches ? 'light' : 'dark';
}

export function nextTheme(t: Theme): Theme {
  return t === 'auto' ? 'light' : t === 'light' ? 'dark' : 'auto';
}
