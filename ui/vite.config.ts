// Vite builds the panel once with a relative base, so the same files serve the browser tab
// (from `switchboard serve`) and the desktop window; Vitest runs the unit tests in happy-dom.
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

export default defineConfig({
  base: './',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 2000 },
  server: {
    // `npm run dev` against a running router: SWITCHBOARD_URL=http://127.0.0.1:7010 npm run dev
    proxy: process.env.SWITCHBOARD_URL
      ? {
          // The router refuses foreign Origins: present the router's own to it.
          '/api': { target: process.env.SWITCHBOARD_URL, ws: true, headers: { Origin: process.env.SWITCHBOARD_URL } },
        }
      : undefined,
  },
  test: {
    environment: 'happy-dom',
    include: ['src/**/*.test.{ts,tsx}'],
  },
});
