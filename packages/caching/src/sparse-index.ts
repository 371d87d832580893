/**
 * An {@link OrderedIndex} over sparse ids. `OrderedIndex` is intrusive: an id is a node, so its
 * arrays are as long as the largest id it ever held. The pool keeps one index per (pool, stream)
 * over block slots shared by every stream, so with thousands of streams each index would grow to
 * the number of blocks of all streams: memory in streams × blocks (9,000 streams of an RMM log took
 * gigabytes). This index gives each id a dense local node, so it costs what it holds.
 *
 * ```
 *  block slot (sparse, shared) ──► local node (dense, per index) ──► OrderedIndex
 *        nodeOf: Map                      slotOf: number[]
 * ```
 *
 * The default stream keeps the plain `OrderedIndex` (see `FreeLists`): it holds most blocks and its
 * lookups stay free of the map.
 */
import { NIL, OrderedIndex } from '@allot/blocks';

export class SparseIdIndex extends OrderedIndex {
  private readonly nodeOf = new Map<number, number>();
  private readonly slotOf: number[] = [];
  private readonly spare: number[] = [];
  /**
   * Above 0 while a method of the base class runs: its own calls of overridden methods (`remove`
   * asks `predecessor`, `rekey` asks `remove` and `insert`, ...) pass local nodes, not slots.
   */
  private inside = 0;

  constructor() {
    super({ initialIds: 4 });
  }

  private node(id: number): number {
    return this.nodeOf.get(id) ?? NIL;
  }

  private slot(node: number): number {
    return node === NIL ? NIL : this.slotOf[node]!;
  }

  override has(id: number): boolean {
    if (this.inside > 0) return super.has(id);
    const node = this.node(id);
    return node !== NIL && super.has(node);
  }

  override primary(id: number): number {
    return this.inside > 0 ? super.primary(id) : super.primary(this.node(id));
  }

  override secondary(id: number): number {
    return this.inside > 0 ? super.secondary(id) : super.secondary(this.node(id));
  }

  override value(id: number): number {
    return this.inside > 0 ? super.value(id) : super.value(this.node(id));
  }

  override first(): number {
    return this.inside > 0 ? super.first() : this.slot(super.first());
  }

  override last(): number {
    return this.inside > 0 ? super.last() : this.slot(super.last());
  }

  override clear(): void {
    super.clear();
    this.nodeOf.clear();
    this.slotOf.length = 0;
    this.spare.length = 0;
  }

  override insert(id: number, primary: number, secondary: number, value: number): void {
    if (this.inside > 0) {
      super.insert(id, primary, secondary, value);
      return;
    }
    let node = this.nodeOf.get(id);
    if (node === undefined) {
      node = this.spare.pop() ?? this.slotOf.length;
      this.nodeOf.set(id, node);
      this.slotOf[node] = id;
    }
    this.inside++;
    try {
      super.insert(node, primary, secondary, value);
    } finally {
      this.inside--;
    }
  }

  override remove(id: number): void {
    if (this.inside > 0) {
      super.remove(id);
      return;
    }
    const node = this.node(id);
    this.inside++;
    try {
      super.remove(node);
    } finally {
      this.inside--;
    }
    this.nodeOf.delete(id);
    this.spare.push(node);
  }

  override updateInPlace(id: number, primary: number, secondary: number, value: number): void {
    if (this.inside > 0) {
      super.updateInPlace(id, primary, secondary, value);
      return;
    }
    this.inside++;
    try {
      super.updateInPlace(this.node(id), primary, secondary, value);
    } finally {
      this.inside--;
    }
  }

  override rekey(id: number, primary: number, secondary: number, value: number): void {
    if (this.inside > 0) {
      super.rekey(id, primary, secondary, value);
      return;
    }
    this.inside++;
    try {
      super.rekey(this.node(id), primary, secondary, value);
    } finally {
      this.inside--;
    }
  }

  override lowerBound(primary: number, secondary: number): number {
    if (this.inside > 0) return super.lowerBound(primary, secondary);
    return this.slot(this.within(() => super.lowerBound(primary, secondary)));
  }

  override successor(id: number): number {
    if (this.inside > 0) return super.successor(id);
    return this.slot(this.within(() => super.successor(this.node(id))));
  }

  override predecessor(id: number): number {
    if (this.inside > 0) return super.predecessor(id);
    return this.slot(this.within(() => super.predecessor(this.node(id))));
  }

  override firstAtLeast(from: number, need: number): number {
    if (this.inside > 0) return super.firstAtLeast(from, need);
    return this.slot(this.within(() => super.firstAtLeast(from, need)));
  }

  override nextAtLeast(id: number, need: number): number {
    if (this.inside > 0) return super.nextAtLeast(id, need);
    return this.slot(this.within(() => super.nextAtLeast(this.node(id), need)));
  }

  private within(run: () => number): number {
    this.inside++;
    try {
      return run();
    } finally {
      this.inside--;
    }
  }
}
