/**
 * `pnpm lab` builds the lab with tooling/scripts/quiet-build.mjs, so that turbo's banner, task
 * summary and telemetry notice do not come before the lab's own output.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const script = join(root, 'tooling', 'scripts', 'quiet-build.mjs');

function build(target: string) {
  return spawnSync(process.execPath, [script, target], { cwd: root, encoding: 'utf8' });
}

describe('quiet-build', () => {
  it('prints nothing when the build succeeds', () => {
    const result = build('@allot/tooling'); // a package with nothing to build: fast
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('');
  });

  it('prints what turbo said, on stderr, when it fails', () => {
    const result = build('@allot/no-such-package');
    expect(result.status).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/no-such-package/);
    expect(result.stderr).toMatch(/quiet-build: building @allot\/no-such-package failed/);
  });

  it('is what `pnpm lab` runs before the lab', () => {
    const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts;
    expect(scripts.lab).toBe(
      'node tooling/scripts/quiet-build.mjs @allot/lab && node apps/lab/dist/cli.js',
    );
  });
});
