/** Registers a list of `count` rows with the keyboard navigation while the component is mounted. */
import { useEffect, useRef } from 'react';
import { setActiveNav } from './nav';

export function useListNav(count: number, selected: number, select: (i: number) => void, open?: (i: number) => void) {
  const ref = useRef({ count, selected, select, open });
  ref.current = { count, selected, select, open };
  useEffect(() => {
    const nav = {
      move(delta: number) {
        const { count: n, selected: s, select: sel } = ref.current;
        if (n === 0) return;
        const next = s < 0 ? (delta > 0 ? 0 : n - 1) : Math.max(0, Math.min(n - 1, s + delta));
        sel(next);
      },
      open() {
        const { selected: s, open: o } = ref.current;
        if (s >= 0) o?.(s);
      },
    };
    setActiveNav(nav);
    return () => setActiveNav(null);
  }, []);
}
