// Bundles the extension into dist/extension.js (vscode-jsonrpc inlined; 'vscode' is the host's).
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
});
console.log(`esbuild: dist/extension.js${production ? ' (production)' : ''}`);
