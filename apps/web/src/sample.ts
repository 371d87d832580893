/**
 * The sample a newcomer can try: a PyTorch memory snapshot made in the page by the lab's snapshot
 * generator (`torchSnapshotChunks` of @allot/workloads: a seeded model of the caching allocator's
 * entries, segments and blocks, with Python stacks), pickled as PyTorch writes it and read back
 * through the same reader as a dropped file. Nothing is fetched.
 */
import { type TorchSnapshotOptions, torchSnapshotChunks } from '@allot/workloads';

/** The sample's name in the page, and on the command line it prints. */
export const SAMPLE_NAME = 'sample-snapshot.pickle';

/** Its entries, stack depth and seed: a few seconds of a training-like loop, read in a second. */
export const SAMPLE_OPTIONS: TorchSnapshotOptions = { events: 40_000, depth: 12, seed: 1 };

/** The sample's bytes, chunk by chunk, letting the worker's other messages through between them. */
export async function* sampleChunks(): AsyncGenerator<Uint8Array> {
  for (const chunk of torchSnapshotChunks(SAMPLE_OPTIONS)) {
    yield chunk;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}
