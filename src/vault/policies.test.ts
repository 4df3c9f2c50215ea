/**
 * The policy cache against a reload that lands while a read is in flight (issue 26 item 11): the
 * request that began before the reload may use what it read, but nothing it read is cached past
 * the reload, or a removed grant would work again on the next request.
 */
import { MapStore } from '../storage/store.js';
import { Policies } from './policies.js';

/** A store whose reads return what they read, then wait for `gate` (a slow database). */
class GatedStore extends MapStore {
  gate: Promise<void> | undefined;
  override async get(key: string): Promise<Buffer | undefined> {
    const value = await super.get(key);
    if (this.gate !== undefined) await this.gate;
    return value;
  }
}

it('a read in flight across a reload caches nothing: the next request sees the edited policy', async () => {
  const store = new GatedStore();
  const policies = new Policies(() => store);
  await policies.put('', 'ops', 'path "sys/metrics" { capabilities = ["read"] }');
  policies.load();
  let open!: () => void;
  store.gate = new Promise<void>((resolve) => (open = resolve));
  const inFlight = policies.acl('', ['ops']);
  // The active node edits the policy in the shared storage, and this node reloads its caches.
  await new Promise((resolve) => setImmediate(resolve));
  const stored = [...store.data.keys()].find((k) => k.endsWith('ops')) as string;
  await store.commit([{ type: 'put', key: stored, value: Buffer.from('path "sys/metrics" { capabilities = ["deny"] }') }]);
  policies.load();
  store.gate = undefined;
  open();
  expect((await inFlight).capabilities('sys/metrics')).toEqual(['read']);
  expect((await policies.acl('', ['ops'])).capabilities('sys/metrics')).toEqual(['deny']);
});
