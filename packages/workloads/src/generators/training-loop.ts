/**
 * A synthetic transformer training loop (a GPT-style decoder), as seen by a tensor allocator.
 *
 * ```
 * start      weights (one block per parameter tensor), live throughout
 * each step  batch s+1 prefetched (outlives step s) ─ forward ─ backward ─ optimizer ─ free batch s
 *   forward    per layer, per op: allocate the op's output; a temporary (not saved for backward)
 *              is freed as soon as the next op has consumed it
 *   backward   ops in reverse: allocate parameter gradients (kept until the optimizer step) and the
 *              input gradient, free the incoming gradient, free the op's saved output
 *   optimizer  optimizer state allocated at the first step, live throughout; gradients freed
 *              (PyTorch's zero_grad(set_to_none=True)); the loss of step s is kept until step s+1
 * ```
 *
 * The sequence length is drawn per step from [minSeqLen, maxSeqLen], so activation sizes change
 * every step: the pattern that fragments a caching allocator. With `checkpointing`, a layer keeps
 * only its input during forward and recomputes the rest at the start of its backward.
 *
 * Per layer (B batch, T tokens, H hidden, A heads, e bytes per element), forward outputs:
 * ln1 BTH·e, qkv 3BTH·e, scores BATT·e (temporary), softmax BATT·e, context BTH·e, projection
 * BTH·e (temporary), residual BTH·e, ln2 BTH·e, fc1 4BTH·e, gelu 4BTH·e, fc2 BTH·e (temporary),
 * residual BTH·e. Logits are kept in fp32 (BTV·4) as mixed-precision training does.
 */
import { Random } from '../random';
import { type Trace, TraceBuilder } from '../trace';
import { checkInteger, checkRange } from './check-options';

/** Options of {@link trainingLoop}: the model, the batch and the run. */
export interface TrainingLoopOptions {
  /** Transformer blocks. @defaultValue 4 */
  readonly layers?: number;
  /** Hidden size (model width). @defaultValue 256 */
  readonly hidden?: number;
  /** Attention heads (the attention matrices are B·A·T·T). @defaultValue 4 */
  readonly heads?: number;
  /** Vocabulary size (embedding and logits). @defaultValue 4096 */
  readonly vocab?: number;
  /** Sequences per batch. @defaultValue 4 */
  readonly batchSize?: number;
  /** Shortest sequence, in tokens. @defaultValue 32 */
  readonly minSeqLen?: number;
  /** Longest sequence, in tokens. @defaultValue 256 */
  readonly maxSeqLen?: number;
  /** Bytes per element of weights, gradients and activations (2 for bf16/fp16). @defaultValue 2 */
  readonly bytesPerElement?: number;
  /** Optimizer: Adam keeps two fp32 states per parameter, SGD with momentum one. @defaultValue 'adam' */
  readonly optimizer?: 'adam' | 'sgd';
  /** Keep only each layer's input in forward and recompute in backward. @defaultValue false */
  readonly checkpointing?: boolean;
  /** Training steps. @defaultValue 100 */
  readonly steps?: number;
  /** PRNG seed (sequence lengths). @defaultValue 1 */
  readonly seed?: number;
}

/** The memory a configuration implies, before activations. */
export interface TrainingBudget {
  /** Parameters in the model. */
  readonly parameters: number;
  /** Bytes of weights. */
  readonly weightBytes: number;
  /** Bytes of gradients at the end of a backward pass. */
  readonly gradientBytes: number;
  /** Bytes of optimizer state. */
  readonly optimizerBytes: number;
  /**
   * Bytes of activations at the longest sequence, at the start of backward: the outputs each layer
   * saves for backward (with checkpointing: each layer's output, plus one layer's outputs while it
   * is recomputed), the embedding and final norm, the
   * fp32 logits and their gradient, and the batch. The largest step holds about this much on top of
   * weights and optimizer state.
   */
  readonly activationBytes: number;
}

interface Op {
  /** Output elements per token (the activation is tokens × this, or B·A·T·T for attention). */
  readonly width: number;
  /** Attention matrix (B·A·T·T) instead of tokens × width. */
  readonly attention?: boolean;
  /** Kept for backward; otherwise freed once the next op has run. */
  readonly saved: boolean;
  /** Parameter tensors of the op, in elements. */
  readonly params: readonly number[];
}

function layerOps(hidden: number): Op[] {
  const h = hidden;
  return [
    { width: h, saved: true, params: [h, h] }, // ln1 (weight, bias)
    { width: 3 * h, saved: true, params: [3 * h * h, 3 * h] }, // qkv
    { width: 0, attention: true, saved: false, params: [] }, // scores
    { width: 0, attention: true, saved: true, params: [] }, // softmax
    { width: h, saved: true, params: [] }, // context
    { width: h, saved: false, params: [h * h, h] }, // projection
    { width: h, saved: true, params: [] }, // residual
    { width: h, saved: true, params: [h, h] }, // ln2
    { width: 4 * h, saved: true, params: [4 * h * h, 4 * h] }, // fc1
    { width: 4 * h, saved: true, params: [] }, // gelu
    { width: h, saved: false, params: [4 * h * h, h] }, // fc2
    { width: h, saved: true, params: [] }, // residual: the layer's output
  ];
}

interface Resolved {
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  readonly vocab: number;
  readonly batchSize: number;
  readonly minSeqLen: number;
  readonly maxSeqLen: number;
  readonly bytesPerElement: number;
  readonly optimizer: 'adam' | 'sgd';
  readonly checkpointing: boolean;
  readonly steps: number;
  readonly seed: number;
}

function resolve(options: TrainingLoopOptions): Resolved {
  const resolved: Resolved = {
    layers: options.layers ?? 4,
    hidden: options.hidden ?? 256,
    heads: options.heads ?? 4,
    vocab: options.vocab ?? 4096,
    batchSize: options.batchSize ?? 4,
    minSeqLen: options.minSeqLen ?? 32,
    maxSeqLen: options.maxSeqLen ?? 256,
    bytesPerElement: options.bytesPerElement ?? 2,
    optimizer: options.optimizer ?? 'adam',
    checkpointing: options.checkpointing ?? false,
    steps: options.steps ?? 100,
    seed: options.seed ?? 1,
  };
  for (const key of [
    'layers',
    'hidden',
    'heads',
    'vocab',
    'batchSize',
    'minSeqLen',
    'maxSeqLen',
    'bytesPerElement',
    'steps',
  ] as const) {
    checkInteger(key, resolved[key], 1);
  }
  checkRange('minSeqLen', resolved.minSeqLen, 'maxSeqLen', resolved.maxSeqLen);
  if (resolved.optimizer !== 'adam' && resolved.optimizer !== 'sgd') {
    throw new RangeError(`optimizer must be 'adam' or 'sgd', got ${String(resolved.optimizer)}`);
  }
  return resolved;
}

/** Parameter tensors of the model, in elements, in creation order. */
function parameterTensors(o: Resolved): number[] {
  const tensors = [o.vocab * o.hidden, o.maxSeqLen * o.hidden]; // token and position embeddings
  for (let l = 0; l < o.layers; l++)
    for (const op of layerOps(o.hidden)) tensors.push(...op.params);
  tensors.push(o.hidden, o.hidden); // final layer norm (the LM head is tied to the embedding)
  return tensors;
}

const FP32 = 4;
const INT64 = 8;

/** Activations live at the start of backward for sequences of `seqLen` tokens (see TrainingBudget). */
function activationBytes(o: Resolved, seqLen: number): number {
  const e = o.bytesPerElement;
  const tokens = o.batchSize * seqLen;
  let perLayer = 0;
  for (const op of layerOps(o.hidden)) {
    if (!op.saved) continue;
    perLayer += (op.attention ? o.batchSize * o.heads * seqLen * seqLen : tokens * op.width) * e;
  }
  // Checkpointing keeps each layer's output, and one layer's saved outputs while it is recomputed.
  const layers = o.checkpointing
    ? o.layers * tokens * o.hidden * e + perLayer
    : o.layers * perLayer;
  const embeddingAndNorm = 2 * tokens * o.hidden * e;
  const logitsAndGradient = 2 * tokens * o.vocab * FP32;
  const batch = 2 * tokens * INT64;
  return layers + embeddingAndNorm + logitsAndGradient + batch;
}

/** Parameters, weights, gradients and optimizer state that a configuration implies. */
export function trainingBudget(options: TrainingLoopOptions = {}): TrainingBudget {
  const o = resolve(options);
  const parameters = parameterTensors(o).reduce((sum, n) => sum + n, 0);
  const statesPerParameter = o.optimizer === 'adam' ? 2 : 1;
  return {
    parameters,
    weightBytes: parameters * o.bytesPerElement,
    gradientBytes: parameters * o.bytesPerElement,
    optimizerBytes: parameters * FP32 * statesPerParameter,
    activationBytes: activationBytes(o, o.maxSeqLen),
  };
}

/**
 * A seeded training-loop trace; `meta` holds the configuration and its {@link TrainingBudget}.
 *
 * @example
 * ```ts
 * const trace = trainingLoop({ layers: 12, hidden: 768, heads: 12, maxSeqLen: 1024, steps: 50 });
 * ```
 */
export function trainingLoop(options: TrainingLoopOptions = {}): Trace {
  const o = resolve(options);
  const budget = trainingBudget(o);
  const random = new Random(o.seed);
  const builder = new TraceBuilder('trainingLoop');
  const e = o.bytesPerElement;
  const ops = layerOps(o.hidden);

  const params = parameterTensors(o);
  for (const n of params) builder.alloc(n * e);
  const optimizerState: number[] = [];

  const batchOf = (tokens: number): [number, number] => [
    builder.alloc(tokens * INT64), // input ids
    builder.alloc(tokens * INT64), // targets
  ];
  let seqLen = random.integer(o.minSeqLen, o.maxSeqLen);
  let batch = batchOf(o.batchSize * seqLen);
  let previousLoss = -1;

  for (let step = 0; step < o.steps; step++) {
    const tokens = o.batchSize * seqLen;
    const bytesOf = (op: Op): number =>
      (op.attention ? o.batchSize * o.heads * seqLen * seqLen : tokens * op.width) * e;

    // The data loader prefetches the next batch while this one is in use.
    const nextSeqLen = random.integer(o.minSeqLen, o.maxSeqLen);
    const nextBatch = step + 1 < o.steps ? batchOf(o.batchSize * nextSeqLen) : null;

    // Forward. `saved[l]` holds the saved outputs of layer l, in creation order.
    const embedding = builder.alloc(tokens * o.hidden * e);
    const saved: number[][] = [];
    const runLayer = (): number[] => {
      const kept: number[] = [];
      let pendingTemporary = -1;
      for (const op of ops) {
        const output = builder.alloc(bytesOf(op));
        if (pendingTemporary >= 0) builder.free(pendingTemporary);
        pendingTemporary = -1;
        if (op.saved) kept.push(output);
        else pendingTemporary = output;
      }
      if (pendingTemporary >= 0) builder.free(pendingTemporary);
      return kept;
    };
    for (let l = 0; l < o.layers; l++) {
      const kept = runLayer();
      const output = kept[kept.length - 1]!;
      if (o.checkpointing) {
        // Keep only the layer's output (the next layer's input); recompute the rest in backward.
        for (let k = kept.length - 2; k >= 0; k--) builder.free(kept[k]!);
        saved.push([output]);
      } else {
        saved.push(kept);
      }
    }
    const finalNorm = builder.alloc(tokens * o.hidden * e);
    const logits = builder.alloc(tokens * o.vocab * FP32);
    const loss = builder.alloc(FP32);

    // Backward, in reverse.
    const gradients: number[] = [];
    const logitsGrad = builder.alloc(tokens * o.vocab * FP32);
    builder.free(logits);
    let grad = builder.alloc(tokens * o.hidden * e);
    builder.free(logitsGrad);
    gradients.push(builder.alloc(o.hidden * e), builder.alloc(o.hidden * e)); // final norm
    builder.free(finalNorm);
    for (let l = o.layers - 1; l >= 0; l--) {
      let kept = saved[l]!;
      if (o.checkpointing) {
        // Recompute: the forward of this layer again (its output is already kept).
        const recomputed = runLayer();
        builder.free(recomputed[recomputed.length - 1]!);
        kept = [...recomputed.slice(0, -1), kept[0]!];
      }
      let savedIndex = kept.length - 1;
      for (let k = ops.length - 1; k >= 0; k--) {
        const op = ops[k]!;
        for (let p = op.params.length - 1; p >= 0; p--)
          gradients.push(builder.alloc(op.params[p]! * e));
        const inputWidth = k === 0 ? o.hidden : ops[k - 1]!.width;
        const inputBytes =
          k > 0 && ops[k - 1]!.attention
            ? o.batchSize * o.heads * seqLen * seqLen * e
            : tokens * inputWidth * e;
        const inputGrad = builder.alloc(inputBytes);
        builder.free(grad);
        grad = inputGrad;
        if (op.saved) builder.free(kept[savedIndex--]!);
      }
    }
    // Embedding backward: gradients of the two embedding tables.
    gradients.push(builder.alloc(params[1]! * e), builder.alloc(params[0]! * e));
    builder.free(grad);
    builder.free(embedding);

    // Optimizer step.
    if (step === 0) {
      const states = o.optimizer === 'adam' ? 2 : 1;
      for (const n of params)
        for (let s = 0; s < states; s++) optimizerState.push(builder.alloc(n * FP32));
    }
    for (const g of gradients) builder.free(g);

    // The loss of step s is kept (for logging) until step s+1 ends; the batch of step s goes.
    if (previousLoss >= 0) builder.free(previousLoss);
    previousLoss = loss;
    builder.free(batch[0]);
    builder.free(batch[1]);
    if (nextBatch) batch = nextBatch;
    seqLen = nextSeqLen;
  }

  return builder.build(`training-${o.layers}L-${o.hidden}H`, {
    generator: 'trainingLoop',
    ...o,
    parameters: budget.parameters,
    weightBytes: budget.weightBytes,
    gradientBytes: budget.gradientBytes,
    optimizerBytes: budget.optimizerBytes,
    optimizerStateTensors: optimizerState.length,
  });
}
