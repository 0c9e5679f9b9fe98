import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// A static SPA embedded in berth-shim: hashed assets under /assets, no inline script (the shim's
// Content-Security-Policy allows only 'self'), terminal code split into its own lazy chunk.
export default defineConfig({
  plugins: [svelte()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    target: 'es2022',
  },
  // `npm run dev` / `vite preview` against a local berth-shim (hack/dev.sh).
  server: { proxy: { '/api': { target: 'http://127.0.0.1:7070', ws: true } } },
  preview: { proxy: { '/api': { target: 'http://127.0.0.1:7070', ws: true } } },
});
