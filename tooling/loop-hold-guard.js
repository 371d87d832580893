/**
 * Setup file of the vitest preset: fails a test that held its worker's event loop longer than
 * `ALLOT_LOOP_HOLD_LIMIT_MS` of CPU time in one stretch (see loop-hold.js), naming the test and
 * the stretch. Work done outside any test (loading the file, beforeAll/afterAll) is checked when
 * the file ends.
 */
import { appendFileSync } from 'node:fs';
import { setInterval } from 'node:timers';
import { afterAll, afterEach, beforeEach } from 'vitest';
import { holdMessage, LoopHoldMeter, longer, loopHoldSettings, TICK_MS } from './loop-hold.js';

const settings = loopHoldSettings(process.env);

/** One meter per process, whatever the number of test files it runs. */
function processMeter() {
  const key = Symbol.for('allot.loop-hold-meter');
  const shared = /** @type {Record<symbol, LoopHoldMeter | undefined>} */ (globalThis);
  let meter = shared[key];
  if (meter === undefined) {
    const created = new LoopHoldMeter();
    setInterval(() => created.mark(), TICK_MS).unref();
    shared[key] = meter = created;
  }
  return meter;
}

/** `file > suite > test`, as vitest prints it. */
function fullName(/** @type {import('vitest').RunnerTestCase} */ test) {
  const names = [];
  for (let t = /** @type {{ name: string, suite?: any } | undefined} */ (test); t; t = t.suite) {
    names.unshift(t.name);
  }
  if (names[0] !== test.file.name) names.unshift(test.file.name);
  return names.join(' > ');
}

/** Logs the stretch if asked to, and throws when it is past the limit. */
function check(/** @type {string} */ where, /** @type {import('./loop-hold.js').Stretch} */ hold) {
  if (settings.log !== undefined) {
    appendFileSync(
      settings.log,
      `${hold.cpuMs.toFixed(0)}\t${hold.wallMs.toFixed(0)}\t${where.replaceAll(/\s+/g, ' ')}\n`,
    );
  }
  if (settings.limitMs > 0 && hold.cpuMs > settings.limitMs) {
    throw new Error(holdMessage(where, hold, settings.limitMs));
  }
}

if (settings.limitMs > 0 || settings.log !== undefined) {
  const meter = processMeter();
  meter.take(); // the worker's own start is not the file's doing; loading its modules is
  /** @type {import('./loop-hold.js').Stretch | null} */
  let outside = null;
  let file = '';
  beforeEach((context) => {
    file = context.task.file.name;
    outside = longer(outside, meter.take());
  });
  afterEach((context) => check(`"${fullName(context.task)}"`, meter.take()));
  afterAll((suite) => {
    const hold = longer(outside, meter.take());
    outside = null;
    if (hold !== null) check(`${suite.name || file}, outside its tests,`, hold);
  });
}
