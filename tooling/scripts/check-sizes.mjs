#!/usr/bin/env node
/**
 * Rooms a newcomer can find their way in: no source file under packages/NAME/src or apps/NAME/src
 * (tests left out) over 600 lines, and no class over 400 lines (from its `class` line to the brace
 * that closes it at the start of a line). A file or class past the limit is printed with its size
 * and fails the check; split it by concern (see the Design section of the package's README).
 *
 * Usage: node tooling/scripts/check-sizes.mjs   (part of `pnpm lint`)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { sourceFiles, workspaceDirs } from './source-files.mjs';

const MAX_FILE_LINES = 600;
const MAX_CLASS_LINES = 400;
const root = join(import.meta.dirname, '..', '..');
const CLASS = /^(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(\w+)/;

const problems = [];
let checked = 0;
for (const { dir } of workspaceDirs(root)) {
  const src = join(dir, 'src');
  if (!existsSync(src)) continue;
  for (const file of sourceFiles(src)) {
    checked++;
    const lines = readFileSync(file, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    const where = relative(root, file);
    if (lines.length > MAX_FILE_LINES) {
      problems.push(`${where}: ${lines.length} lines (at most ${MAX_FILE_LINES})`);
    }
    lines.forEach((line, i) => {
      const match = CLASS.exec(line);
      if (!match) return;
      const end = lines.findIndex((l, j) => j > i && l.startsWith('}'));
      const length = (end < 0 ? lines.length : end + 1) - i;
      if (length > MAX_CLASS_LINES) {
        problems.push(
          `${where}:${i + 1}: class ${match[1]} is ${length} lines (at most ${MAX_CLASS_LINES})`,
        );
      }
    });
  }
}

if (problems.length > 0) {
  console.error(`check-sizes: ${problems.length} too large:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(
  `check-sizes: ${checked} source files, none over ${MAX_FILE_LINES} lines, no class over ${MAX_CLASS_LINES}`,
);
