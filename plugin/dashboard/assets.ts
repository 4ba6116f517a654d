// The page's script (ui/app.ts with preact, htm and the stylesheet, bundled by esbuild) and its HTML.
// The packed plugin carries the script prebuilt beside its bundle (hack/bundle.ts writes dist/dashboard-ui/app.js
// next to dist/kubectl-ads.mjs), so it needs neither esbuild nor preact at run time; run from the sources
// (bin/kubectl-ads), the script is built in memory at start-up with esbuild, a devDependency.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BuildOptions, build } from 'esbuild';
import { TOKEN_META } from './views.ts';

/** The folder, beside the plugin's bundle, that holds the prebuilt page script. */
export const UI_DIR = 'dashboard-ui';
export const UI_SCRIPT = 'app.js';

/** esbuild options for the page script (without output: callers add outfile, or write: false). */
export function uiBuildOptions(): BuildOptions {
  return {
    entryPoints: [fileURLToPath(new URL('./ui/app.ts', import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    loader: { '.css': 'text' },
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  };
}

/** Replaced by the server with the session's action token (server.ts); '' when the dashboard is read-only. */
export const TOKEN_PLACEHOLDER = '%ADS_TOKEN%';

export interface Assets {
  html: string;
  script: string;
}

export function indexHtml(title: string): string {
  const esc = title.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="${TOKEN_META}" content="${TOKEN_PLACEHOLDER}">
<title>${esc}</title>
<link rel="icon" href="data:,">
<script type="module" src="${UI_SCRIPT}"></script>
</head>
<body></body>
</html>
`;
}

/** The prebuilt script beside the bundle, else the sources built now. */
export async function loadAssets(title = 'kubectl ads dashboard'): Promise<Assets> {
  const prebuilt = new URL(`./${UI_DIR}/${UI_SCRIPT}`, import.meta.url);
  let script: string;
  if (existsSync(fileURLToPath(prebuilt))) script = readFileSync(prebuilt, 'utf8');
  else {
    let esbuild: { build: typeof build };
    try {
      esbuild = await import('esbuild');
    } catch (err) {
      throw new Error(
        `the dashboard page is neither prebuilt (${fileURLToPath(prebuilt)}) nor buildable here (esbuild: ${(err as Error).message})`,
        { cause: err },
      );
    }
    const out = await esbuild.build({ ...uiBuildOptions(), write: false, outdir: 'out' });
    script = out.outputFiles.find((f) => f.path.endsWith('.js'))?.text ?? '';
  }
  return { html: indexHtml(title), script };
}
