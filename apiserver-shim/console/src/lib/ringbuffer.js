// A bounded list of log lines: the newest `capacity` are kept, older ones fall off, so a tail
// left open for hours holds steady memory.
export class RingBuffer {
  constructor(capacity) {
    this.capacity = capacity;
    this.items = new Array(capacity);
    this.start = 0;
    this.length = 0;
  }

  push(item) {
    const end = (this.start + this.length) % this.capacity;
    this.items[end] = item;
    if (this.length < this.capacity) this.length++;
    else this.start = (this.start + 1) % this.capacity;
  }

  clear() {
    this.items = new Array(this.capacity);
    this.start = 0;
    this.length = 0;
  }

  /** The kept items, oldest first. */
  toArray() {
    const out = new Array(this.length);
    for (let i = 0; i < this.length; i++) out[i] = this.items[(this.start + i) % this.capacity];
    return out;
  }
}
