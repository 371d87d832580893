/**
 * Raw worker process: times one row on one raw workload and reports over IPC (see
 * `raw-measure.ts`). One row per process, as in an application that uses one allocator: the loop's
 * call sites see only that row's `allocate` and `free`. Started by the raw CLI with `--expose-gc`
 * and `--no-liftoff`, as the replay workers are.
 */
import { sendToParent } from './ipc';
import type { RawMessage, RawRequest } from './protocol';
import { measureRaw } from './raw-measure';
import { findAllocator } from './registry';

const send = (message: RawMessage): Promise<void> => sendToParent(message);

async function run(request: RawRequest): Promise<void> {
  const entry = findAllocator(request.allocator);
  if (!entry) throw new Error(`unknown allocator ${request.allocator}`);
  const factory = await entry.load();
  const result = measureRaw(
    {
      name: entry.name,
      factory,
      ...(entry.rawCapacity ? { capacity: entry.rawCapacity } : {}),
    },
    request.workload,
    request.seed,
  );
  await send({ type: 'result', result });
}

process.on('message', (message: RawRequest) => {
  if (message?.type !== 'raw') return;
  run(message)
    .catch((error: unknown) =>
      send({
        type: 'error',
        message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      }),
    )
    .finally(() => send({ type: 'done' }).then(() => process.exit(0)));
});
