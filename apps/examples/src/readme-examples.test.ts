/**
 * Every TypeScript example in the READMEs runs on the Node.js the project supports (20 and newer):
 * each ```ts block is stripped of its types (TypeScript's transpiler, target ESNext, so syntax Node
 * does not have — `using`, say — is not lowered away) and run as an ES module in a child process.
 * A block that cannot run here says why in a comment just above it: `<!-- example: needs (what) -->`
 * (a GPU, a second NUMA node, the reader's own module) is still stripped and checked for syntax;
 * `<!-- example: signatures -->` marks an API listing, which is not a program and is not run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const scratch = join(here, '..', '.readme-examples');

const readmes = [
  join(root, 'README.md'),
  ...['packages', 'apps'].flatMap((folder) =>
    readdirSync(join(root, folder))
      .map((name) => join(root, folder, name, 'README.md'))
      .filter((path) => existsSync(path)),
  ),
];

interface Example {
  readonly readme: string;
  readonly line: number;
  readonly code: string;
  /** What the block needs that this machine may not have: checked for syntax only. */
  readonly needs: string | null;
  /** An API listing: not run. */
  readonly signatures: boolean;
}

function examplesOf(readme: string): Example[] {
  const lines = readFileSync(readme, 'utf8').split('\n');
  const examples: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```ts') continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== '```') end++;
    const before = lines.slice(Math.max(0, i - 2), i).join('\n');
    const needs = /<!-- example: needs \(([^)]*)\) -->/.exec(before)?.[1] ?? null;
    const signatures = before.includes('<!-- example: signatures -->');
    examples.push({
      readme,
      line: start,
      code: lines.slice(start, end).join('\n'),
      needs,
      signatures,
    });
    i = end;
  }
  return examples;
}

const examples = readmes.flatMap(examplesOf);
mkdirSync(scratch, { recursive: true });

describe('README examples', () => {
  it('found examples to run', () => {
    expect(examples.length).toBeGreaterThan(10);
  });

  for (const [n, example] of examples.entries()) {
    const where = `${relative(root, example.readme)}:${example.line}`;
    if (example.signatures) {
      it.skip(`${where} (API signatures)`, () => {});
      continue;
    }
    it(`${where}${example.needs ? ` (syntax only: needs ${example.needs})` : ''}`, () => {
      const js = ts.transpileModule(example.code, {
        compilerOptions: {
          target: ts.ScriptTarget.ESNext,
          module: ts.ModuleKind.ESNext,
          verbatimModuleSyntax: false,
        },
        reportDiagnostics: true,
        fileName: 'example.ts',
      });
      const problems = (js.diagnostics ?? []).map((d) =>
        ts.flattenDiagnosticMessageText(d.messageText, '\n'),
      );
      expect(problems, where).toEqual([]);
      const file = join(scratch, `example-${n}.mjs`);
      // An empty export makes a declarations-only block a module too.
      writeFileSync(file, `${js.outputText}\nexport {};\n`);
      const args = example.needs ? ['--check', file] : [file];
      const result = spawnSync(process.execPath, args, {
        cwd: scratch,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(result.status, `${where}\n${result.stderr}`).toBe(0);
    });
  }
});
