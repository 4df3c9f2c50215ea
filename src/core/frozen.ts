/**
 * Whether a value is frozen all the way down: such a value can never change (a frozen object
 * stays frozen), so what is computed from it may be remembered by its identity. The memos over
 * stored records' shared decodes (storage/store.ts getDecoded) ask this first.
 *
 *   deeplyFrozen(Object.freeze({ a: Object.freeze([1]) }));   // true
 *   deeplyFrozen(Object.freeze({ a: [1] }));                  // false: its array can change
 */
export function deeplyFrozen(v: unknown, each: (o: object) => boolean = () => true): boolean {
  if (v === null || typeof v !== 'object') return true;
  return Object.isFrozen(v) && each(v) && Object.values(v).every((x) => deeplyFrozen(x, each));
}
