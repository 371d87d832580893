/**
 * The built-in workloads of the default run: seeded, so every run on every machine replays the same
 * events. Sizes are those of real models, so the figures are in the units people meet on a GPU.
 *
 * | id          | what                                                                          |
 * | ----------- | ----------------------------------------------------------------------------- |
 * | `training`  | GPT-2 small's shape (12 layers, hidden 768, 12 heads, vocab 50,257), batch 8, |
 * |             | 128–1,024 tokens per step, bf16, Adam, no activation checkpointing             |
 * | `inference` | continuous batching with a 7B-class decoder's KV cache (32 layers, hidden     |
 * |             | 4,096, fp16): prompts 16–1,024 tokens, 8–512 generated, up to 32 at once       |
 * | `larson`    | larson-style server churn: 4 threads × 1,000 slots, 16–512 B, 50,000 frees    |
 */
import {
  type InferenceServingOptions,
  inferenceServing,
  type LarsonOptions,
  larson,
  type Trace,
  type TrainingBudget,
  type TrainingLoopOptions,
  trainingBudget,
  trainingLoop,
} from '@allot/workloads';
import { formatBytes, formatCount } from './units';

/** A built-in workload. */
export interface WorkloadSpec {
  readonly id: string;
  readonly title: string;
  /** One line on the parameters. */
  readonly description: string;
  build(): Trace;
  /** The memory budget the parameters imply (training only). */
  readonly budget?: TrainingBudget;
}

/** The default training model: GPT-2 small's shape. */
export function trainingModel(seed: number, quick: boolean): TrainingLoopOptions {
  return {
    layers: 12,
    hidden: 768,
    heads: 12,
    vocab: 50_257,
    batchSize: 8,
    minSeqLen: 128,
    maxSeqLen: 1024,
    bytesPerElement: 2,
    optimizer: 'adam',
    checkpointing: false,
    steps: quick ? 10 : 40,
    seed,
  };
}

function inferenceModel(seed: number, quick: boolean): InferenceServingOptions {
  return {
    requests: quick ? 80 : 300,
    maxConcurrent: 32,
    admitPerStep: 4,
    minPromptTokens: 16,
    maxPromptTokens: 1024,
    minOutputTokens: 8,
    maxOutputTokens: 512,
    kvChunkTokens: 64,
    layers: 32,
    hidden: 4096,
    vocab: 32_000,
    bytesPerElement: 2,
    seed,
  };
}

function larsonModel(seed: number, quick: boolean): LarsonOptions {
  return {
    threads: 4,
    blocksPerThread: 1000,
    operations: quick ? 10_000 : 50_000,
    seed,
  };
}

/** Every built-in workload, in report order. */
export function builtInWorkloads(seed: number, quick: boolean): WorkloadSpec[] {
  const training = trainingModel(seed, quick);
  const inference = inferenceModel(seed, quick);
  const churn = larsonModel(seed, quick);
  return [
    {
      id: 'training',
      title: 'Transformer training loop (GPT-2 small shape)',
      description:
        `${training.layers} layers, hidden ${training.hidden}, ${training.heads} heads, vocab ` +
        `${formatCount(training.vocab!)}, batch ${training.batchSize}, ${training.minSeqLen}–` +
        `${formatCount(training.maxSeqLen!)} tokens per step, bf16, Adam, activation checkpointing ` +
        `${training.checkpointing ? 'on' : 'off'}, ${training.steps} steps, seed ${seed}`,
      build: () => trainingLoop(training),
      budget: trainingBudget(training),
    },
    {
      id: 'inference',
      title: 'Inference serving with a growing KV cache (7B-class decoder)',
      description:
        `${inference.requests} requests, up to ${inference.maxConcurrent} at once, prompts ` +
        `${inference.minPromptTokens}–${formatCount(inference.maxPromptTokens!)} tokens, ` +
        `${inference.minOutputTokens}–${inference.maxOutputTokens} generated, KV cache grown by ` +
        `${inference.kvChunkTokens} tokens (${inference.layers} layers, hidden ` +
        `${formatCount(inference.hidden!)}, fp16: ${formatBytes(2 * inference.layers! * inference.hidden! * 2)} per token), seed ${seed}`,
      build: () => inferenceServing(inference),
    },
    {
      id: 'larson',
      title: 'Server churn, larson-style',
      description:
        `${churn.threads} threads × ${formatCount(churn.blocksPerThread!)} slots, ` +
        `${formatCount(churn.operations!)} frees each followed by an allocation of 16–512 B, seed ${seed}`,
      build: () => larson(churn),
    },
  ];
}

/** Ids of the built-in workloads. */
export const WORKLOAD_IDS = ['training', 'inference', 'larson'] as const;

/** The budget as lines for the table header. */
export function budgetLines(budget: TrainingBudget, peakLive: number): string {
  return [
    `parameters ${(budget.parameters / 1e6).toFixed(1)} M`,
    `weights ${formatBytes(budget.weightBytes)}`,
    `gradients ${formatBytes(budget.gradientBytes)}`,
    `optimizer state ${formatBytes(budget.optimizerBytes)}`,
    `activations at the longest sequence ${formatBytes(budget.activationBytes)}`,
    `peak live in the replay ${formatBytes(peakLive)}`,
  ].join(' · ');
}
