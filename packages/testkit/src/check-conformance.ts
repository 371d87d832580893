/**
 * The suite, framework-free: `checkConformance` throws (a fast-check failure whose message holds
 * the seed, the replay path, the shrunk command list and the `[invariant]` that broke) or returns.
 */
import type { Allocator } from '@allot/core';
import fc from 'fast-check';
import { ConformanceError, fail } from './conformance-error';
import { type Operation, operationArbitrary } from './operations';
import type { ConformanceOptions } from './options';
import { resolveCapabilities, Scenario, subjectOf } from './scenario';
import { assertYielding } from './yielding';

/** The properties of the suite; each is one test in `describeConformance`. */
export type ConformanceProperty = 'model' | 'determinism';

const DEFAULT_SEED = 0x5eed;

function envNumber(name: string): number | undefined {
  const raw = typeof process === 'undefined' ? undefined : process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value))
    throw new Error(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** fast-check parameters from the options and FC_NUM_RUNS / FC_SEED / FC_PATH / ALLOT_FUZZ. */
export function propertyParameters(options: {
  readonly numRuns?: number;
  readonly seed?: number;
  readonly path?: string;
}): fc.Parameters<unknown> {
  const fuzzing = typeof process !== 'undefined' && process.env.ALLOT_FUZZ === '1';
  const numRuns = options.numRuns ?? envNumber('FC_NUM_RUNS') ?? (fuzzing ? 1000 : 100);
  // A fixed seed keeps `pnpm test` deterministic; fuzzing explores fresh seeds (printed on failure).
  const seed = options.seed ?? envNumber('FC_SEED') ?? (fuzzing ? undefined : DEFAULT_SEED);
  const path = options.path ?? (typeof process === 'undefined' ? undefined : process.env.FC_PATH);
  return {
    numRuns,
    ...(seed === undefined ? {} : { seed }),
    ...(path ? { path } : {}),
  };
}

/**
 * A fast-check failure whose cause is a broken invariant, as a `ConformanceError` whose message
 * names the invariant first and ends with the counterexample and the command line that replays it;
 * any other error as it is.
 */
function conformanceFailure(name: string, error: unknown): unknown {
  const cause = (error as { cause?: unknown }).cause;
  if (!(cause instanceof ConformanceError)) return error;
  const report = error instanceof Error ? error.message : String(error);
  const seed = /seed: (-?\d+)/.exec(report)?.[1];
  const path = /path: "([^"]*)"/.exec(report)?.[1];
  const replay =
    seed === undefined
      ? report
      : `${report}\nReplay: FC_SEED=${seed} FC_PATH=${path ?? ''} (numRuns 1 is enough with a path)`;
  return new ConformanceError(cause.invariant, `${name}: ${cause.detail}`, replay);
}

/** fc.assert, with a broken invariant rethrown as a `ConformanceError` (see above). */
export function assertProperty<T>(
  name: string,
  property: fc.IProperty<T>,
  params: fc.Parameters<T>,
): void {
  try {
    fc.assert(property, params);
  } catch (error) {
    throw conformanceFailure(name, error);
  }
}

/** {@link assertProperty} with the same runs, letting go of the event loop between them. */
export async function assertPropertyYielding<T>(
  name: string,
  property: fc.IProperty<T>,
  params: fc.Parameters<T>,
): Promise<void> {
  try {
    await assertYielding(property, params);
  } catch (error) {
    throw conformanceFailure(name, error);
  }
}

function operations(options: ConformanceOptions): fc.Arbitrary<Operation[]> {
  const caps = resolveCapabilities(options.capabilities);
  // `size: 'max'`: without it fast-check's default size stops every array at 10 commands, however
  // long `maxCommands` allows.
  return fc.array(operationArbitrary(caps.alignments.length), {
    maxLength: caps.maxCommands,
    size: 'max',
  });
}

function runOnce<A extends Allocator>(options: ConformanceOptions<A>, ops: readonly Operation[]) {
  const scenario = new Scenario(
    options.name,
    subjectOf(options.create()),
    resolveCapabilities(options.capabilities),
  );
  scenario.run(ops);
  return scenario.addresses;
}

/** The suite's properties, or one of them, for `options.create`. */
function conformanceProperties<A extends Allocator>(
  options: ConformanceOptions<A>,
  property: ConformanceProperty | 'all',
): fc.IProperty<[Operation[]]>[] {
  const caps = resolveCapabilities(options.capabilities);
  const properties: fc.IProperty<[Operation[]]>[] = [];
  if (property === 'all' || property === 'model') {
    properties.push(
      fc.property(operations(options), (ops) => {
        runOnce(options, ops);
      }),
    );
  }
  if ((property === 'all' || property === 'determinism') && caps.deterministic) {
    properties.push(
      fc.property(operations(options), (ops) => {
        const first = runOnce(options, ops);
        const second = runOnce(options, ops);
        for (let i = 0; i < Math.max(first.length, second.length); i++) {
          if (first[i] !== second[i]) {
            fail(
              'determinism',
              `allocation ${i} returned ${first[i]} on one fresh instance and ${second[i]} on another`,
            );
          }
        }
      }),
    );
  }
  return properties;
}

/**
 * Runs the conformance suite (or one property of it) against `options.create`.
 * @throws when an invariant breaks; the message names it as `[invariant]` and gives the seed.
 */
export function checkConformance<A extends Allocator>(
  options: ConformanceOptions<A>,
  property: ConformanceProperty | 'all' = 'all',
): void {
  const params = propertyParameters(options);
  for (const each of conformanceProperties(options, property)) {
    assertProperty(options.name, each, params);
  }
}

/**
 * {@link checkConformance} with the same runs, letting go of the event loop every 50 ms or so
 * (see `yielding`): for a test runner whose worker must keep answering while the suite runs.
 * @throws (rejects) when an invariant breaks, as `checkConformance` does.
 */
export async function checkConformanceAsync<A extends Allocator>(
  options: ConformanceOptions<A>,
  property: ConformanceProperty | 'all' = 'all',
): Promise<void> {
  const params = propertyParameters(options);
  for (const each of conformanceProperties(options, property)) {
    await assertPropertyYielding(options.name, each, params);
  }
}
