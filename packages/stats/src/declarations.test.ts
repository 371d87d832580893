/**
 * The published declarations, of the main entry and of `./serve`, compile for a consumer without
 * `@types/node` (a browser or WebGPU project): nothing in them may name a `node:` module.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const serve = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'serve.js');

describe('declarations', () => {
  it.skipIf(!existsSync(dist) || !existsSync(serve))('type-check without @types/node', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-stats-types-'));
    writeFileSync(
      join(dir, 'consumer.ts'),
      `import { withStats } from ${JSON.stringify(dist)};\n` +
        `import { serveMetrics, type MetricsServer } from ${JSON.stringify(serve)};\n` +
        'export const used: unknown[] = [serveMetrics, withStats];\n' +
        'export type Server = MetricsServer;\n',
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022'],
          types: [],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    // tsc runs for seconds: waited for without holding this worker's event loop.
    const result = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(
      ({ stdout, stderr }) => ({ status: 0, output: stdout + stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        status: error.code,
        output: error.stdout + error.stderr,
      }),
    );
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
  });
});
