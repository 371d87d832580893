#!/usr/bin/env node
// The `allot-lab` command. It lives outside dist/ so that `pnpm install` links it before anything
// is built; it only loads the built CLI (dist/cli.js, from `pnpm build`).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('allot-lab is not built yet: run `pnpm build` in the repository first.\n');
  process.exit(1);
}
await import(cli.href);
