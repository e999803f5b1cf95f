/**
 * Keyboard navigation: `j`/`k` or the arrows move in the active view's list, Enter opens the
 * selection, `/` focuses the view's filter, `1`–`7` switch views. The active list registers
 * itself here; a global key handler (App) calls it.
 */
export interface ListNav {
  move(delta: number): void;
  open(): void;
}

let active: ListNav | null = null;

export function setActiveNav(nav: ListNav | null): void {
  active = nav;
}

export function activeNav(): ListNav | null {
  return active;
}

/** Whether a key event targets a text field (where keys are typing, not commands). */
export function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || !el.tagName) return false;
  return el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable;
}

/** The view key → action of a key press outside text fields, or null. Pure, for tests. */
export function keyAction(key: string): 'down' | 'up' | 'open' | 'filter' | { view: number } | null {
  switch (key) {
    case 'j':
    case 'ArrowDown':
      return 'down';
    case 'k':
    case 'ArrowUp':
      return 'up';
    case 'Enter':
      return 'open';
    case '/':
      return 'filter';
  }
  if (/^[1-7]$/.test(key)) return { view: Number(key) - 1 };
  return null;
}
