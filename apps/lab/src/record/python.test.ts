/**
 * The recorder's own unit tests (python/tests, `python3 -m unittest`), run with the lab's tests:
 * its settings, names, whole files, rank claims, step schedule and failure handling, on a fake torch.
 */
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const tests = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'python', 'tests');
const hasPython = spawnSync('python3', ['--version']).status === 0;
if (!hasPython) console.warn('the recorder’s Python tests skipped: no python3 on PATH');

describe.skipIf(!hasPython)("the recorder's Python unit tests", () => {
  it('pass under python3 -m unittest', async () => {
    const child = spawn('python3', ['-m', 'unittest', 'discover', '-s', tests, '-v'], {
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const status = await new Promise<number | null>((done) => child.on('close', done));
    expect(output, output).toMatch(/\nOK\n/);
    expect(status).toBe(0);
    const ran = Number(/\nRan (\d+) tests? /.exec(output)?.[1]);
    expect(ran).toBeGreaterThanOrEqual(18);
  });
});
