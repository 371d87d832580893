/**
 * The report's page data: what `renderSections` draws, built by the lab from a run's results
 * (`report/page.ts`'s `reportData`). The report file carries it in a JSON block; the web app's
 * engine worker posts it to the page. Text the terminal prints too (the table's cells, the
 * diagnosis, the out-of-memory lines) comes written; figures the page draws or formats itself
 * come as numbers, rounded to keep a big snapshot's report small.
 */

import type { DumpLayout } from '../analysis/dump-layout';
import type { Diagnosis, ReportAllocation } from '../analysis/explain';
import type { Holder } from '../analysis/holders';
import type { LayoutView, Series } from '../analysis/measure';
import type { TargetResult } from '../run';

/** Everything the page shows. */
export interface ReportData {
  /** How the run was invoked, for the page's heading. */
  readonly run: {
    readonly command: string;
    readonly createdAt: string;
    readonly node: string;
    readonly platform: string;
    /** `--capacity` in bytes, or null. */
    readonly capacityBytes: number | null;
  };
  /** The caching-tuned row's name and what its search tries, when a workload has the row. */
  readonly tuned: { readonly row: string; readonly searched: string } | null;
  readonly workloads: readonly WorkloadData[];
  readonly targets: readonly TargetResult[];
}

/** One workload's section. */
export interface WorkloadData {
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly events: number;
  readonly peakLiveBlocks: number;
  /** Requested bytes live at once, at most. */
  readonly peakLiveBytes: number;
  /** The built-in training workload's budget, in words. */
  readonly budget: string | null;
  /** A PyTorch trace: only its caching rows are allocators PyTorch can use. */
  readonly pytorch: boolean;
  /** The table as the terminal prints it: a row per allocator, then PyTorch's recorded one. */
  readonly table: {
    readonly header: readonly string[];
    readonly rows: readonly string[][];
    /** Why a row's ns/event reads `–` though the run timed its rows, when one does. */
    readonly untimed?: string;
  };
  readonly rows: readonly RowData[];
  /** The recording beside the replay: its settings' row and its own peak. */
  readonly recorded: {
    /** The row replaying the recording's settings, or null. */
    readonly row: string | null;
    /** The recording's canonical `PYTORCH_CUDA_ALLOC_CONF`, or null when it states none. */
    readonly config: string | null;
    /** PyTorch's own peak reserved bytes in the recording, when it states them. */
    readonly peakReservedBytes: number | null;
  };
  /** The recording's out-of-memory errors, each as the terminal says it (lines). */
  readonly ooms: readonly (readonly string[])[];
  /** The pool at the first one, and the same moment under the setting with the most headroom. */
  readonly oomLayouts: readonly { readonly name: string; readonly view: LayoutView }[];
  readonly explain: ExplainData | null;
  /** A state dump's answer (its rows are estimates), or null for a recording or a workload. */
  readonly dump: DumpData | null;
}

/**
 * A state dump as the page shows it (`analysis/state-dump.ts` makes the figures): the lines and
 * tables the terminal prints, written, and the segments to draw to scale.
 */
export interface DumpData {
  /** What the file is, and its figures: the terminal's lines. */
  readonly lines: readonly string[];
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  readonly freeBytes: number;
  /** The segments with the most free bytes, header first. */
  readonly segmentTable: readonly (readonly string[])[];
  /** Why there is no one holding the memory by source line, when the dump has no stacks. */
  readonly noStacks: string | null;
  /** What the same blocks need under each setting, marked an estimate; null with no live block. */
  readonly estimate: {
    readonly assumes: string;
    /** Header first; the dump itself, then each caching row. */
    readonly table: readonly (readonly string[])[];
    /** The estimate under the dump's own settings against the dump, in a sentence. */
    readonly own: string | null;
  } | null;
  readonly layout: DumpLayout;
}

/** One allocator row. */
export interface RowData {
  readonly allocator: string;
  /** The tuned row's setting. */
  readonly note: string | null;
  readonly kind: 'range' | 'pool';
  /** A caching row's canonical `PYTORCH_CUDA_ALLOC_CONF`, else null. */
  readonly config: string | null;
  readonly peakReservedBytes: number;
  /** `peakReservedBytes / peakLiveBytes`. */
  readonly ratio: number;
  readonly failures: number;
  /** A pool's segment allocations and growths in the window, and those of the starting state. */
  readonly segments: {
    readonly acquired: number;
    readonly grown: number;
    readonly restored: number;
  } | null;
  readonly externalFragmentationAtPeak: number;
  /** The earlier row whose results are the same, or null (its lines are drawn dashed). */
  readonly sameAs: string | null;
  readonly series: Series;
  readonly layoutAtPeak: LayoutView;
}

/** A drawn allocation of the timeline; its frames are indices into `frameTexts`. */
export interface TimelineAllocation extends Omit<ReportAllocation, 'frames'> {
  /** Grid points it is live over, `[from, to)`. */
  readonly from: number;
  readonly to: number;
  readonly frames?: readonly number[];
}

/** What the report adds beyond the table (see `analysis/explain.ts`). */
export interface ExplainData {
  readonly peakEvent: number;
  readonly gridEvents: readonly number[];
  readonly gridSeconds?: readonly number[];
  readonly liveBytes: readonly number[];
  readonly recordedReserved?: readonly number[];
  readonly rowSeconds?: readonly (readonly number[])[];
  readonly timeline: {
    /** Allocations in the trace. */
    readonly total: number;
    /** Live bytes of the allocations not drawn, per grid point. */
    readonly rest: readonly number[];
    /** Each frame's text once: the drawn allocations' stacks share most of their frames. */
    readonly frameTexts: readonly string[];
    readonly allocations: readonly TimelineAllocation[];
  };
  readonly peak: {
    readonly event: number;
    readonly seconds?: number;
    readonly liveBytes: number;
    /**
     * The largest allocations live at the peak, each with what made it (`frame`: the line of your
     * own code, or what its stack shows instead) when the trace has stacks.
     */
    readonly largest: readonly (Omit<ReportAllocation, 'frames' | 'source'> & {
      readonly frame?: string;
    })[];
    readonly bySource: readonly Holder[];
    /** The same blocks as a call tree, its frames indices into `timeline.frameTexts`. */
    readonly stacks?: StackTreeData;
  };
  readonly diagnosis: Diagnosis;
}

/**
 * A call tree of live blocks as the page draws it (`analysis/stack-tree.ts` makes it): its nodes
 * depth first, each node's callees after it, the most bytes first, in columns.
 */
export interface StackTreeData {
  /** Live bytes (requested) and blocks in all. */
  readonly bytes: number;
  readonly blocks: number;
  /** The least bytes a listed node holds; smaller call paths are summed. */
  readonly minBytes: number;
  /** Per node, its parent's index, −1 for an outermost frame. */
  readonly parent: readonly number[];
  /**
   * Per node, its frame's index into the frame texts; {@link SUMMED_FRAME} for the callees of its
   * parent too small to list, summed; {@link UNRECORDED_FRAME} for the blocks without a stack.
   */
  readonly frame: readonly number[];
  /** Per node, the live bytes and blocks whose stacks pass through it. */
  readonly nodeBytes: readonly number[];
  readonly nodeBlocks: readonly number[];
  /**
   * Per node, the bytes allocated in its frame itself (the innermost frame of their stacks); for
   * a {@link SUMMED_FRAME} node, how many call paths it sums.
   */
  readonly self: readonly number[];
}

/** {@link StackTreeData.frame} of a node that sums its parent's smaller callees. */
export const SUMMED_FRAME = -1;
/** {@link StackTreeData.frame} of the node of the blocks that recorded no stack. */
export const UNRECORDED_FRAME = -2;
