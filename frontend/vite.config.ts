import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// Served by Django under /console/ (and at /): asset URLs are absolute under /console/.
export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  server: {
    // `npx vite` during development proxies the API to a running `make run`.
    proxy: {
      "/api": "http://127.0.0.1:8000",
      "/ui": "http://127.0.0.1:8000",
      "/ws": { target: "ws://127.0.0.1:8000", ws: true },
    },
  },
  test: {
    environment: "node", // DOM tests opt in with a `// @vitest-environment jsdom` line
    include: ["test/**/*.test.{ts,tsx}"],
    setupFiles: ["test/setup.ts"],
    // A bound on a failing test, not a speed claim: the slowest (300 rows, bulk) take ~2 s quiet.
    testTimeout: 60_000,
  },
});
