#!/usr/bin/env node
// Package checks for every published package: publint, @arethetypeswrong/cli, and a consumer test
// that installs the package alone (with the tarballs of its internal dependencies, never workspace
// links) into an empty npm project and runs a tiny ESM and a tiny CJS script against it.
// Usage: node tooling/scripts/check-packages.mjs [@allot/name ...]   (packages must be built)
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { smokeTests } from './consumer-smoke.mjs';

const root = join(import.meta.dirname, '..', '..');
const only = process.argv.slice(2);

function run(command, args, cwd) {
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const output = `${error.stdout ?? ''}${error.stderr ?? ''}`;
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${output}`);
  }
}

const packages = readdirSync(join(root, 'packages'))
  .map((dir) => ({
    dir: join(root, 'packages', dir),
    json: JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')),
  }))
  .filter(({ json }) => !json.private)
  .filter(({ json }) => only.length === 0 || only.includes(json.name));
const byName = new Map(packages.map((p) => [p.json.name, p]));
const allPublished = new Map(
  readdirSync(join(root, 'packages'))
    .map((dir) => ({
      dir: join(root, 'packages', dir),
      json: JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')),
    }))
    .filter(({ json }) => !json.private)
    .map((p) => [p.json.name, p]),
);

const work = mkdtempSync(join(tmpdir(), 'allot-packages-'));
const tarballs = new Map();
function pack(name) {
  if (tarballs.has(name)) return tarballs.get(name);
  const pkg = allPublished.get(name);
  if (!pkg) throw new Error(`${name} is not a published workspace package`);
  const before = new Set(readdirSync(work));
  run('pnpm', ['pack', '--pack-destination', work], pkg.dir);
  const file = readdirSync(work).find((f) => f.endsWith('.tgz') && !before.has(f));
  if (!file) throw new Error(`pnpm pack produced no tarball for ${name}`);
  tarballs.set(name, join(work, file));
  return join(work, file);
}

/** The package and every @allot package it depends on at run time, transitively. */
function closure(name, seen = new Set()) {
  if (seen.has(name)) return seen;
  seen.add(name);
  const json = allPublished.get(name).json;
  for (const dep of Object.keys({ ...json.dependencies, ...json.peerDependencies })) {
    if (allPublished.has(dep)) closure(dep, seen);
  }
  return seen;
}

function smokeBody(name) {
  return smokeTests[name] ?? '';
}

let failures = 0;
for (const { dir, json } of packages) {
  const name = json.name;
  const started = Date.now();
  try {
    run('pnpm', ['exec', 'publint', '--strict'], dir);
    const tarball = pack(name);
    run('pnpm', ['exec', 'attw', tarball, '--profile', 'node16', '--format', 'ascii'], root);

    const project = join(work, `consumer-${name.replace(/[@/]/g, '_')}`);
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, version: '0.0.0' }),
    );
    const deps = [...closure(name)].map(pack);
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...deps], project);
    const body = smokeBody(name);
    const esmLoad = `import * as pkg from '${name}';\nimport assert from 'node:assert/strict';\nimport { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\nconst cjsNames = Object.keys(require('${name}')).sort();\nassert.deepEqual(Object.keys(pkg).filter((k) => k !== 'default').sort(), cjsNames, 'ESM and CJS export the same names');\nassert.ok(cjsNames.length > 0, 'exports something');\n`;
    writeFileSync(join(project, 'smoke.mjs'), `${esmLoad}${body}\nconsole.log('esm ok');\n`);
    writeFileSync(
      join(project, 'smoke.cjs'),
      `const pkg = require('${name}');\nconst assert = require('node:assert/strict');\n${body}\nconsole.log('cjs ok');\n`,
    );
    run('node', ['smoke.mjs'], project);
    run('node', ['smoke.cjs'], project);
    const linked = run('npm', ['ls', '--all', '--parseable'], project)
      .split('\n')
      .filter((line) => line.includes('/packages/'));
    if (linked.length > 0)
      throw new Error(`workspace links leaked into the consumer: ${linked.join(', ')}`);
    console.log(
      `✓ ${name}  publint, attw, installed alone from ${deps.length} tarball(s), ESM + CJS smoke (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
  } catch (error) {
    failures++;
    console.error(`✗ ${name}\n${error.message}`);
  }
}
rmSync(work, { recursive: true, force: true });
if (byName.size === 0) {
  console.error('no published packages matched');
  process.exit(2);
}
console.log(`check:packages: ${packages.length - failures} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
