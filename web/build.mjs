// Bundles the dashboard into internal/router/ui/dist, which kubox-router embeds: one script,
// one stylesheet and the page. `make web` runs it; `make web-check` fails when the committed
// dist differs from what it builds.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";

const out = process.argv[2] ?? "../internal/router/ui/dist";
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: "src/main.js" },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  outdir: out,
  legalComments: "none",
  logLevel: "warning",
});
copyFileSync("src/index.html", `${out}/index.html`);
