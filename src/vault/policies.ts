/**
 * The ACL policy store, per namespace: `sys/policies/acl/:name` and the legacy `sys/policy/:name`.
 * `root` is built in and immutable; `default` is built in until an operator overwrites it.
 * Parsed policies are cached; `load()` drops the cache (unseal, replication apply).
 *
 *   await policies.put('', 'ops', 'path "secret/*" { capabilities = ["read"] }');
 *   const acl = await policies.acl('', ['default', 'ops']);
 */
import { InvalidRequest, NotFound } from '../core/errors.js';
import type { Store } from '../storage/store.js';
import { Acl } from './acl.js';
import { DEFAULT_POLICY_NAME, DEFAULT_POLICY_TEXT, ROOT_POLICY_NAME, parsePolicy, rootPolicy, type Policy } from './policy.js';

const PREFIX = 'core/policy/';

function key(namespace: string, name: string): string {
  return `${PREFIX}${namespace === '' ? '_root' : encodeURIComponent(namespace)}/${name}`;
}

const NAME = /^[a-z0-9][a-z0-9_.@-]*$/;
const possible = (n: string): boolean => NAME.test(n) && n.length <= 128;

function validName(name: string): string {
  const n = name.toLowerCase();
  if (!possible(n)) throw new InvalidRequest(`invalid policy name "${name.slice(0, 64)}"`);
  return n;
}

export class Policies {
  private cache = new Map<string, Policy | null>();
  /** Compiled ACLs by namespace and policy set: built once, not on every request. */
  private acls = new Map<string, Acl>();
  /**
   * Grows at every drop of the caches: a read that began before a drop keeps what it read for
   * its own request but caches nothing, or it could put a removed grant back after the drop.
   */
  private generation = 0;

  constructor(private readonly store: () => Store) {}

  load(): void {
    this.generation++;
    this.cache.clear();
    this.acls.clear();
  }

  async text(namespace: string, name: string): Promise<string> {
    const n = validName(name);
    if (n === ROOT_POLICY_NAME) return '';
    const raw = await this.store().get(key(namespace, n));
    if (raw) return raw.toString('utf8');
    if (n === DEFAULT_POLICY_NAME) return DEFAULT_POLICY_TEXT;
    throw new NotFound();
  }

  async list(namespace: string): Promise<string[]> {
    const stored = await this.store().list(`${PREFIX}${namespace === '' ? '_root' : encodeURIComponent(namespace)}/`);
    const names = new Set(stored.filter((s) => !s.endsWith('/')));
    names.add(DEFAULT_POLICY_NAME);
    if (namespace === '') names.add(ROOT_POLICY_NAME);
    return [...names].sort();
  }

  async put(namespace: string, name: string, text: string): Promise<void> {
    const n = validName(name);
    if (n === ROOT_POLICY_NAME) throw new InvalidRequest('cannot update "root" policy');
    parsePolicy(n, text);
    await this.store().commit([{ type: 'put', key: key(namespace, n), value: Buffer.from(text, 'utf8') }]);
    this.generation++;
    this.cache.delete(key(namespace, n));
    this.acls.clear();
  }

  /** A name no policy can have deletes nothing, and is no error (Vault answers 204 to any other name). */
  async delete(namespace: string, name: string): Promise<void> {
    const n = name.toLowerCase();
    if (n === ROOT_POLICY_NAME) throw new InvalidRequest('cannot delete "root" policy');
    if (n === DEFAULT_POLICY_NAME) throw new InvalidRequest('cannot delete default policy');
    if (!possible(n)) return;
    await this.store().commit([{ type: 'del', key: key(namespace, n) }]);
    this.generation++;
    this.cache.delete(key(namespace, n));
    this.acls.clear();
  }

  /**
   * `acl`, read straight from storage and cached nowhere: for a node whose caches do not follow
   * replicated writes (a DR secondary checking a batch token against its primary's policies).
   */
  async freshAcl(namespace: string, names: readonly string[]): Promise<Acl> {
    const list: Policy[] = [];
    for (const name of names) {
      if (name === ROOT_POLICY_NAME) {
        list.push(rootPolicy);
        continue;
      }
      try {
        list.push(parsePolicy(name, await this.text(namespace, name)));
      } catch (e) {
        if (!(e instanceof NotFound)) throw e;
      }
    }
    return new Acl(list);
  }

  /** The ACL of a token in `namespace` holding `names`; unknown names grant nothing. */
  async acl(namespace: string, names: readonly string[]): Promise<Acl> {
    const id = `${namespace}\u0000${names.join('\u0000')}`;
    const known = this.acls.get(id);
    if (known) return known;
    const generation = this.generation;
    const list: Policy[] = [];
    for (const name of names) {
      if (name === ROOT_POLICY_NAME) {
        list.push(rootPolicy);
        continue;
      }
      const k = key(namespace, name);
      let p = this.cache.get(k);
      if (p === undefined) {
        try {
          p = parsePolicy(name, await this.text(namespace, name));
        } catch (e) {
          if (!(e instanceof NotFound)) throw e;
          p = null;
        }
        if (this.generation === generation) this.cache.set(k, p);
      }
      if (p) list.push(p);
    }
    const acl = new Acl(list);
    // Bounded: token policy sets are few; a flood of distinct sets just rebuilds.
    if (this.acls.size >= 1024) this.acls.clear();
    if (this.generation === generation) this.acls.set(id, acl);
    return acl;
  }
}
