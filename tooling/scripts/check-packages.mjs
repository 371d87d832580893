#!/usr/bin/env node
// Package checks for every published package: publint, @arethetypeswrong/cli, and a consumer test
// that installs the package alone (with the tarballs of its internal dependencies, never workspace
// links) into an empty npm project and runs a tiny ESM and a tiny CJS script against it.
// Optional peer dependencies are not installed for that test: the main entry must work without
// them (so `@allot/cuda`'s `deviceSource()` runs with only `@allot/core` and koffi). Subpath exports
// (`@allot/cuda/caching`) are then smoke-tested after the optional peers are added. For the
// packages with native code, a child process checks that importing them loads no native add-on.
// Every main entry but those `nodeOnly` names must bundle for a browser, as installed (esbuild,
// platform 'browser', no stub for Node.js modules).
// Published apps with a `bin` (the lab) are installed the same way, with npm offline (the registry
// packages they need are packed from the workspace's own copies), and their commands run through
// npx from the empty project as the READMEs spell them (`npx @allot/lab ...`); the library entries
// they export (`@allot/lab/strategies`) import, and `npx @allot/lab serve` answers with the web app
// the lab ships.
// Usage: node tooling/scripts/check-packages.mjs [@allot/name ...]   (packages must be built)
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { lazyNative, nodeOnly, smokeTests } from './consumer-smoke.mjs';
import { workspaceDirs } from './source-files.mjs';

const root = join(import.meta.dirname, '..', '..');
const only = process.argv.slice(2);

function run(command, args, cwd, env = process.env) {
  try {
    return execFileSync(command, args, {
      cwd,
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const output = `${error.stdout ?? ''}${error.stderr ?? ''}`;
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${output}`);
  }
}

/** Every workspace package and app, with its manifest. */
const workspace = workspaceDirs(root).map(({ group, dir }) => ({
  group,
  dir,
  json: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')),
}));
const allPublished = new Map(
  workspace.filter(({ json }) => !json.private).map((p) => [p.json.name, p]),
);
const chosen = [...allPublished.values()].filter(
  ({ json }) => only.length === 0 || only.includes(json.name),
);
const packages = chosen.filter(({ group }) => group === 'packages');
/** Published command-line apps (`bin`, not private): installed from their tarball and run. */
const apps = chosen.filter(({ group, json }) => group === 'apps' && json.bin);

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

/** Peer dependencies that the package marks optional. */
function optionalPeers(json) {
  return Object.keys(json.peerDependencies ?? {}).filter(
    (dep) => json.peerDependenciesMeta?.[dep]?.optional === true,
  );
}

/**
 * The package and every @allot package it needs at run time, transitively: dependencies and
 * required peers (with `withOptional`, the optional peers of `name` itself too).
 */
function closure(name, withOptional = false, seen = new Set()) {
  if (seen.has(name)) return seen;
  seen.add(name);
  const json = allPublished.get(name).json;
  const optional = new Set(optionalPeers(json));
  for (const dep of Object.keys({ ...json.dependencies, ...json.peerDependencies })) {
    if (optional.has(dep) && !withOptional) continue;
    if (allPublished.has(dep)) closure(dep, false, seen);
  }
  return seen;
}

/**
 * Subpath exports other than `.` and `./package.json` that have a smoke script, as
 * `@allot/name/sub`. (`@allot/testkit/vitest` has none: it needs vitest, which is not installed.)
 */
function subpaths(name, json) {
  return Object.keys(json.exports ?? {})
    .filter((key) => key !== '.' && key !== './package.json')
    .map((key) => `${name}${key.slice(1)}`)
    .filter((entry) => entry in smokeTests);
}

/** Writes and runs the ESM and the CJS smoke script of one entry point in `project`. */
function smoke(project, entry, file) {
  const body = smokeTests[entry] ?? '';
  const esmLoad = `import * as pkg from '${entry}';\nimport assert from 'node:assert/strict';\nimport { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\nconst cjsNames = Object.keys(require('${entry}')).sort();\nassert.deepEqual(Object.keys(pkg).filter((k) => k !== 'default').sort(), cjsNames, 'ESM and CJS export the same names');\nassert.ok(cjsNames.length > 0, 'exports something');\n`;
  writeFileSync(join(project, `${file}.mjs`), `${esmLoad}${body}\nconsole.log('esm ok');\n`);
  writeFileSync(
    join(project, `${file}.cjs`),
    `const pkg = require('${entry}');\nconst assert = require('node:assert/strict');\n${body}\nconsole.log('cjs ok');\n`,
  );
  run('node', [`${file}.mjs`], project);
  run('node', [`${file}.cjs`], project);
}

/** Fails when importing `name` (ESM, then CJS) in a fresh process loads one of `addons`. */
function checkNothingNativeOnImport(project, name, addons) {
  const script = `import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
await import('${name}');
require('${name}');
const loaded = ${JSON.stringify(addons)}.filter((addon) => {
  const pattern = new RegExp('[\\\\/]' + addon + '[\\\\/]');
  const cached = Object.keys(require.cache).some((path) => pattern.test(path));
  const mapped = process.platform === 'linux' && readFileSync('/proc/self/maps', 'utf8').split('\\n').some((line) => pattern.test(line));
  return cached || mapped;
});
if (loaded.length > 0) throw new Error('importing ${name} loaded ' + loaded.join(', '));
`;
  writeFileSync(join(project, 'native-on-import.mjs'), script);
  run('node', ['native-on-import.mjs'], project);
}

/**
 * Bundles the main entry of `name`, ESM then CJS, for a browser from `project`, where it is
 * installed from its tarball: nothing external, no stub or alias for Node.js modules, so one
 * imported anywhere under the entry fails with esbuild's "Could not resolve".
 */
async function bundleForBrowser(project, name) {
  const forms = [
    ['ESM', `export * from '${name}';`],
    ['CJS', `module.exports = require('${name}');`],
  ];
  for (const [form, contents] of forms) {
    try {
      await build({
        stdin: { contents, resolveDir: project, sourcefile: 'browser-entry.js' },
        absWorkingDir: project,
        bundle: true,
        platform: 'browser',
        format: 'esm',
        write: false,
        logLevel: 'silent',
      });
    } catch (error) {
      const problems = (error.errors ?? [error]).map(
        (e) => `  ${e.location ? `${e.location.file}: ` : ''}${e.text ?? e.message}`,
      );
      throw new Error(
        `${name} (${form}) does not bundle for a browser; only ${Object.keys(nodeOnly).join(', ')} may need Node.js:\n${problems.join('\n')}`,
      );
    }
  }
}

/** The @allot packages installed in `project`. */
function installedAllot(project) {
  const dir = join(project, 'node_modules', '@allot');
  return existsSync(dir)
    ? readdirSync(dir)
        .map((d) => `@allot/${d}`)
        .sort()
    : [];
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
    const required = [...closure(name)];
    const deps = required.map(pack);
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...deps], project);
    const installed = installedAllot(project);
    if (installed.join() !== [...required].sort().join())
      throw new Error(
        `expected only ${required.join(', ')} installed, found ${installed.join(', ')}`,
      );
    smoke(project, name, 'smoke');
    if (lazyNative[name]) checkNothingNativeOnImport(project, name, lazyNative[name]);
    const browser = !(name in nodeOnly);
    if (browser) await bundleForBrowser(project, name);
    const entries = subpaths(name, json);
    let withPeers = '';
    if (entries.length > 0) {
      const extra = [...closure(name, true)].filter((dep) => !required.includes(dep)).map(pack);
      if (extra.length > 0) {
        run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...extra], project);
        withPeers = ` + ${extra.length} optional peer tarball(s) for ${entries.join(', ')}`;
      }
      for (const [i, entry] of entries.entries()) smoke(project, entry, `smoke-sub${i}`);
    }
    const linked = run('npm', ['ls', '--all', '--parseable'], project)
      .split('\n')
      .filter((line) => line.includes('/packages/'));
    if (linked.length > 0)
      throw new Error(`workspace links leaked into the consumer: ${linked.join(', ')}`);
    console.log(
      `✓ ${name}  publint, attw, installed alone from ${deps.length} tarball(s)${withPeers}, ESM + CJS smoke${browser ? ', bundles for a browser' : ''} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
  } catch (error) {
    failures++;
    console.error(`✗ ${name}\n${error.message}`);
  }
}
/**
 * Commands a published app must run once installed from its tarball alone, through `npx`, from an
 * empty folder, as its READMEs spell them: each `[npx's arguments, what the output must show]`.
 */
const snapshotFixture = join(root, 'packages/workloads/src/readers/fixtures/snapshot.json');
const cliChecks = {
  '@allot/lab': (version) => [
    [['@allot/lab', '--version'], `allot-lab ${version}`],
    [['-p', '@allot/lab', 'allot-lab', '-V'], `allot-lab ${version}`],
    [['@allot/lab', 'replay', snapshotFixture, '--no-report', '--quiet'], 'torch-snapshot file'],
    // The recorder's Python files ship, and load in the command's Python processes.
    [
      [
        '@allot/lab',
        'record',
        '--',
        'python3',
        '-c',
        "import sys; print('recorder loaded:', 'allot_lab_record' in sys.modules)",
      ],
      'recorder loaded: True',
    ],
  ],
};

/**
 * `npx @allot/lab serve FILE` from the installed package: the web app it ships answers on
 * 127.0.0.1, and so does the file it names. Returns how many paths answered.
 */
async function checkServe(project, env) {
  const child = spawn('npx', ['@allot/lab', 'serve', snapshotFixture], {
    cwd: project,
    env,
    detached: true, // its own process group: npx and the server it starts stop together
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const url = await new Promise((resolve, reject) => {
      let text = '';
      const timer = setTimeout(
        () => reject(new Error(`npx @allot/lab serve printed no URL:\n${text}`)),
        60_000,
      );
      const hear = (chunk) => {
        text += chunk;
        const found = /http:\/\/127\.0\.0\.1:\d+\/\S*/.exec(text);
        if (found) {
          clearTimeout(timer);
          resolve(found[0]);
        }
      };
      child.stdout.on('data', hear);
      child.stderr.on('data', hear);
      child.on('exit', (code) =>
        reject(new Error(`npx @allot/lab serve exited with ${code}:\n${text}`)),
      );
    });
    const paths = ['/', '/app.js', '/app.css', '/files/0/snapshot.json'];
    for (const path of paths) {
      const response = await fetch(new URL(path, url));
      const body = await response.text();
      if (!response.ok || (path === '/' && !body.includes('allot lab'))) {
        throw new Error(`npx @allot/lab serve: GET ${path} answered ${response.status}`);
      }
    }
    return paths.length;
  } finally {
    process.kill(-child.pid, 'SIGTERM');
  }
}

/** Where `dep` is installed for the package in `from`, walking up `node_modules` folders. */
function installedDir(from, dep) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', dep);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(dir) === dir) throw new Error(`${dep} is not installed for ${from}`);
  }
}

/**
 * Tarballs of the registry packages that the workspace packages `names` need at run time (the
 * lab's uplot), and of what those need in turn, packed from the copies pnpm installed here: with
 * them an app installs from tarballs alone, offline.
 */
function registryTarballs(names) {
  const packed = new Map();
  const visit = (dep, from) => {
    if (allPublished.has(dep)) return;
    const dir = installedDir(from, dep);
    if (packed.has(dir)) return;
    const out = run(
      'npm',
      ['pack', dir, '--json', '--ignore-scripts', '--pack-destination', work],
      work,
    );
    packed.set(dir, join(work, JSON.parse(out)[0].filename));
    const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    for (const next of Object.keys(json.dependencies ?? {})) visit(next, dir);
  };
  for (const name of names) {
    const { dir, json } = allPublished.get(name);
    for (const dep of Object.keys(json.dependencies ?? {})) visit(dep, dir);
  }
  return [...packed.values()];
}

/** npm's cache for the apps' installs and commands: empty, so nothing can come from it. */
const offlineCache = join(work, 'npm-cache');
const offline = { ...process.env, npm_config_offline: 'true', npm_config_cache: offlineCache };

for (const { dir, json } of apps) {
  const name = json.name;
  const started = Date.now();
  try {
    run('pnpm', ['exec', 'publint', '--strict'], dir);
    const project = join(work, `consumer-${name.replace(/[@/]/g, '_')}`);
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, version: '0.0.0' }),
    );
    // `npx @allot/lab` runs the package's command only when it has exactly one.
    const bins = typeof json.bin === 'string' ? [name] : Object.keys(json.bin);
    if (bins.length !== 1)
      throw new Error(`npx ${name} needs exactly one command in bin, found ${bins.join(', ')}`);
    const required = [...closure(name)];
    const deps = required.map(pack);
    const registry = registryTarballs(required);
    run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--loglevel=error', ...deps, ...registry],
      project,
      offline,
    );
    const checks = cliChecks[name]?.(json.version) ?? [];
    if (checks.length === 0) throw new Error(`no command checks for ${name}`);
    for (const [args, expected] of checks) {
      const output = run('npx', args, project, offline);
      if (!output.includes(expected)) {
        throw new Error(`npx ${args.join(' ')} printed no '${expected}':\n${output}`);
      }
    }
    // Library entries an app publishes beside its commands (the lab's strategy table) import.
    const subpaths = Object.keys(json.exports ?? {}).filter((key) => key !== './package.json');
    for (const subpath of subpaths) {
      const specifier = `${name}${subpath.slice(1)}`;
      const script = `const m = await import(${JSON.stringify(specifier)}); console.log('exports:', Object.keys(m).length);`;
      const output = run('node', ['--input-type=module', '-e', script], project);
      if (!/exports: [1-9]/.test(output)) {
        throw new Error(`import('${specifier}') exported nothing:\n${output}`);
      }
    }
    const entries = subpaths.length > 0 ? `, ${subpaths.length} library entries imported` : '';
    const served =
      name === '@allot/lab' ? `, serve answered ${await checkServe(project, offline)} paths` : '';
    console.log(
      `✓ ${name}  publint, installed offline from ${deps.length + registry.length} tarball(s), ${checks.length} commands through npx${entries}${served} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
  } catch (error) {
    failures++;
    console.error(`✗ ${name}\n${error.message}`);
  }
}

rmSync(work, { recursive: true, force: true });
if (packages.length === 0 && apps.length === 0) {
  console.error('no published packages matched');
  process.exit(2);
}
console.log(
  `check:packages: ${packages.length + apps.length - failures} passed, ${failures} failed`,
);
process.exit(failures === 0 ? 0 : 1);
