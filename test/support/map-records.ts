/**
 * Named records in memory, for unit tests of what keeps small records by name (the seal's system
 * records, generation attempts, operation tokens). Values are copied in and out, as storage
 * would: a caller that changes a buffer it passed or got changes nothing stored.
 *
 *   const records = new MapRecords();
 *   const seal = new SealManager(records);
 */
export class MapRecords {
  readonly data = new Map<string, Buffer>();

  async get(name: string): Promise<Buffer | undefined> {
    const v = this.data.get(name);
    return v === undefined ? undefined : Buffer.from(v);
  }

  /** undefined deletes. */
  async put(name: string, value: Buffer | undefined): Promise<void> {
    if (value === undefined) this.data.delete(name);
    else this.data.set(name, Buffer.from(value));
  }
}
