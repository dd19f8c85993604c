/**
 * Indexed binary min-heap of defender indexes ordered by (load / capacity, chamber count, index):
 * the least-loaded defender first, fewer chambers and then the smaller id on ties, so every choice is
 * deterministic. Supports re-keying and removing any member in O(log m).
 */
export class DefenderHeap {
  private readonly heap: Int32Array;
  private readonly at: Int32Array;
  private size = 0;

  constructor(
    m: number,
    private readonly load: Float64Array,
    private readonly capacity: Float64Array,
    private readonly count: Int32Array,
  ) {
    this.heap = new Int32Array(m);
    this.at = new Int32Array(m).fill(-1);
  }

  get length(): number {
    return this.size;
  }

  /** The least-loaded member; only valid when `length > 0`. */
  peek(): number {
    return this.heap[0];
  }

  has(d: number): boolean {
    return this.at[d] >= 0;
  }

  push(d: number): void {
    this.heap[this.size] = d;
    this.at[d] = this.size;
    this.size++;
    this.up(this.size - 1);
  }

  /** Restores the order after `d`'s load or count changed. */
  update(d: number): void {
    const i = this.at[d];
    if (i < 0) return;
    this.up(i);
    this.down(this.at[d]);
  }

  remove(d: number): void {
    const i = this.at[d];
    if (i < 0) return;
    const last = this.heap[--this.size];
    this.at[d] = -1;
    if (last === d) return;
    this.heap[i] = last;
    this.at[last] = i;
    this.up(i);
    this.down(this.at[last]);
  }

  private less(a: number, b: number): boolean {
    const la = this.load[a] / this.capacity[a];
    const lb = this.load[b] / this.capacity[b];
    if (la !== lb) return la < lb;
    if (this.count[a] !== this.count[b]) return this.count[a] < this.count[b];
    return a < b;
  }

  private up(i: number): void {
    const h = this.heap;
    const d = h[i];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(d, h[p])) break;
      h[i] = h[p];
      this.at[h[i]] = i;
      i = p;
    }
    h[i] = d;
    this.at[d] = i;
  }

  private down(i: number): void {
    const h = this.heap;
    const d = h[i];
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const c = r < this.size && this.less(h[r], h[l]) ? r : l;
      if (!this.less(h[c], d)) break;
      h[i] = h[c];
      this.at[h[i]] = i;
      i = c;
    }
    h[i] = d;
    this.at[d] = i;
  }
}
