#!/usr/bin/env node
/**
 * The web app travels in the lab's package: packing (prepack) copies the built app, apps/web/dist,
 * to dist/web, where `allot-lab serve` finds it once installed; postpack removes the copy, so that
 * in the repository serve keeps using apps/web/dist, which `pnpm build` refreshes.
 *
 * Usage: node scripts/web-app.mjs copy|remove   (run by pnpm pack and pnpm publish)
 */
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const lab = join(import.meta.dirname, '..');
const copy = join(lab, 'dist', 'web');
const action = process.argv[2];
if (action === 'copy') {
  const app = join(lab, '..', 'web', 'dist');
  if (!existsSync(join(app, 'index.html'))) {
    console.error('apps/web/dist has no index.html: run `pnpm build` before packing the lab');
    process.exit(1);
  }
  rmSync(copy, { recursive: true, force: true });
  cpSync(app, copy, { recursive: true });
} else if (action === 'remove') {
  rmSync(copy, { recursive: true, force: true });
} else {
  console.error('usage: node scripts/web-app.mjs copy|remove');
  process.exit(2);
}
