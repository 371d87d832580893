/**
 * An inference server with continuous batching, as seen by a device allocator.
 *
 * ```
 * each engine step   admit 0..admitPerStep waiting requests (while fewer than maxConcurrent run):
 *                      prompt ids (kept until the request ends), prefill activations (temporary),
 *                      a KV cache sized for the prompt, rounded up to kvChunkTokens
 *                    decode one token for every running request:
 *                      hidden states and fp32 logits for the batch (temporary)
 *                      a request whose KV cache is full grows it: allocate the larger cache, free
 *                      the old one (a reallocation, as a contiguous cache needs)
 *                    requests that reached their output length free their cache and prompt:
 *                      output lengths are random, so requests finish out of order
 * ```
 *
 * Prompt and output lengths are uniform in their ranges. KV bytes per token are
 * `2 · layers · hidden · bytesPerElement` (keys and values for every layer).
 */
import { Random } from '../random';
import { type Trace, TraceBuilder } from '../trace';
import { checkInteger, checkRange } from './check-options';

/** Options of {@link inferenceServing}. */
export interface InferenceServingOptions {
  /** Requests served in total. @defaultValue 200 */
  readonly requests?: number;
  /** Requests decoded together at most. @defaultValue 16 */
  readonly maxConcurrent?: number;
  /** Requests admitted per engine step at most (the arrival rate). @defaultValue 4 */
  readonly admitPerStep?: number;
  /** Shortest prompt, in tokens. @defaultValue 16 */
  readonly minPromptTokens?: number;
  /** Longest prompt, in tokens. @defaultValue 512 */
  readonly maxPromptTokens?: number;
  /** Fewest tokens generated per request. @defaultValue 8 */
  readonly minOutputTokens?: number;
  /** Most tokens generated per request. @defaultValue 256 */
  readonly maxOutputTokens?: number;
  /** Tokens the KV cache grows by. @defaultValue 64 */
  readonly kvChunkTokens?: number;
  /** Transformer blocks. @defaultValue 4 */
  readonly layers?: number;
  /** Hidden size. @defaultValue 256 */
  readonly hidden?: number;
  /** Vocabulary size (logits). @defaultValue 4096 */
  readonly vocab?: number;
  /** Bytes per element of activations and KV cache. @defaultValue 2 */
  readonly bytesPerElement?: number;
  /** PRNG seed. @defaultValue 1 */
  readonly seed?: number;
}

interface Running {
  promptIds: number;
  cache: number;
  cacheTokens: number;
  tokens: number;
  remaining: number;
}

const INT32 = 4;
const FP32 = 4;

/** A seeded inference-serving trace. */
export function inferenceServing(options: InferenceServingOptions = {}): Trace {
  const {
    requests = 200,
    maxConcurrent = 16,
    admitPerStep = 4,
    minPromptTokens = 16,
    maxPromptTokens = 512,
    minOutputTokens = 8,
    maxOutputTokens = 256,
    kvChunkTokens = 64,
    layers = 4,
    hidden = 256,
    vocab = 4096,
    bytesPerElement = 2,
    seed = 1,
  } = options;
  const checked = {
    requests,
    maxConcurrent,
    admitPerStep,
    minPromptTokens,
    maxPromptTokens,
    minOutputTokens,
    maxOutputTokens,
    kvChunkTokens,
    layers,
    hidden,
    vocab,
    bytesPerElement,
  };
  for (const [key, value] of Object.entries(checked)) checkInteger(key, value, 1);
  checkRange('minPromptTokens', minPromptTokens, 'maxPromptTokens', maxPromptTokens);
  checkRange('minOutputTokens', minOutputTokens, 'maxOutputTokens', maxOutputTokens);

  const random = new Random(seed);
  const builder = new TraceBuilder('inferenceServing');
  const kvBytesPerToken = 2 * layers * hidden * bytesPerElement;
  const roundTokens = (tokens: number): number => Math.ceil(tokens / kvChunkTokens) * kvChunkTokens;
  let running: Running[] = [];
  let admitted = 0;
  let engineSteps = 0;

  while (admitted < requests || running.length > 0) {
    engineSteps++;
    const arrivals = random.integer(0, admitPerStep);
    for (let a = 0; a < arrivals && admitted < requests && running.length < maxConcurrent; a++) {
      admitted++;
      const prompt = random.integer(minPromptTokens, maxPromptTokens);
      const promptIds = builder.alloc(prompt * INT32);
      const prefill = builder.alloc(prompt * hidden * bytesPerElement * 4);
      const cacheTokens = roundTokens(prompt + 1);
      const cache = builder.alloc(cacheTokens * kvBytesPerToken);
      builder.free(prefill);
      running.push({
        promptIds,
        cache,
        cacheTokens,
        tokens: prompt,
        remaining: random.integer(minOutputTokens, maxOutputTokens),
      });
    }
    if (running.length === 0) continue;

    const hiddenStates = builder.alloc(running.length * hidden * bytesPerElement);
    const logits = builder.alloc(running.length * vocab * FP32);
    for (const request of running) {
      request.tokens++;
      request.remaining--;
      if (request.tokens > request.cacheTokens) {
        const cacheTokens = request.cacheTokens + kvChunkTokens;
        const grown = builder.alloc(cacheTokens * kvBytesPerToken);
        builder.free(request.cache);
        request.cache = grown;
        request.cacheTokens = cacheTokens;
      }
    }
    builder.free(logits);
    builder.free(hiddenStates);

    const still: Running[] = [];
    for (const request of running) {
      if (request.remaining > 0) {
        still.push(request);
      } else {
        builder.free(request.cache);
        builder.free(request.promptIds);
      }
    }
    running = still;
  }

  return builder.build(`inference-${requests}`, {
    generator: 'inferenceServing',
    ...checked,
    kvBytesPerToken,
    engineSteps,
    seed,
  });
}
