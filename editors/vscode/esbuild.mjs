// Bundles the extension into dist/extension.js: the .vsix needs no node_modules.
// `node esbuild.mjs --production` minifies (what vsce runs via vscode:prepublish).
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');

await esbuild.build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    outfile: 'dist/extension.js',
    platform: 'node',
    target: 'node18',
    format: 'cjs',
    external: ['vscode'],
    minify: production,
    sourcemap: production ? false : 'linked',
    sourcesContent: false,
    logLevel: 'warning',
});
