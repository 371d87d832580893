/**
 * Worker process: measures one allocator on a list of workloads and reports over IPC.
 *
 * One process per allocator keeps the replay loop's call sites monomorphic: only this allocator's
 * `allocate` and `free` ever run through them, as in an application that uses one allocator.
 * Started by the bench CLI with `--expose-gc` (a collection runs before each timed run) and
 * `--no-liftoff` (the wasm peer optimised from its first call).
 */
import { sendToParent } from './ipc';
import { measureCell } from './measure';
import type { RunRequest, WorkerMessage } from './protocol';
import { defaultTimingCapacity, findAllocator, maxCapacityOf } from './registry';
import { buildTrace, profileOf, timedFrom } from './workload-plan';

const send = (message: WorkerMessage): Promise<void> => sendToParent(message);

async function run(request: RunRequest): Promise<void> {
  const entry = findAllocator(request.allocator);
  if (!entry) {
    await send({
      type: 'error',
      workload: null,
      message: `unknown allocator ${request.allocator}`,
    });
    return;
  }
  const factory = await entry.load();
  for (const spec of request.workloads) {
    try {
      const trace = await buildTrace(spec);
      const { profile } = profileOf(trace);
      const reason = entry.skips?.(profile) ?? null;
      if (reason) {
        await send({ type: 'skipped', workload: spec.id, reason });
        continue;
      }
      const maxCapacity = maxCapacityOf(entry);
      const wanted = entry.timingCapacity?.(profile) ?? defaultTimingCapacity(profile);
      const result = measureCell(trace, {
        allocator: entry.name,
        workload: spec.id,
        factory,
        profile,
        timingCapacity: Math.min(maxCapacity, wanted),
        maxCapacity,
        timedFrom: timedFrom(trace),
        settings: request.settings,
        measureMemory: request.measureMemory,
        onPhase: (phase) => void send({ type: 'phase', workload: spec.id, phase }),
      });
      await send({ type: 'result', result });
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      await send({ type: 'error', workload: spec.id, message });
    }
  }
}

process.on('message', (message: RunRequest) => {
  if (message?.type !== 'run') return;
  run(message)
    .catch((error: unknown) =>
      send({
        type: 'error',
        workload: null,
        message: error instanceof Error ? error.message : String(error),
      }),
    )
    .finally(() => send({ type: 'done' }).then(() => process.exit(0)));
});
