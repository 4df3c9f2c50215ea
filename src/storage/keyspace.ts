/**
 * Every physical key prefix, in one file. Physical keys sort by UTF-8 bytes (LevelDB's order);
 * numbers are zero-padded hex so string order is numeric order.
 *
 *   classify('local/tokens/abc')           // 'local'  -> Merkle tree 2
 *   Keys.value('sys/policy/ops')           // 'v/sys/policy/ops'
 *   Keys.wal(42n)                          // 'w/000000000000002a'
 *
 *   v/<logical key>                         encrypted value (every class)
 *   w/<16 hex index>                        WAL entry (body || chained hash)
 *   wm                                      WAL meta
 *   m/<tree>/p/<2 hex page>                 page record: 256 subpage hashes || page hash
 *   m/<tree>/l/<2 hex page><2 hex sub>/<k>  leaf: 32-byte value hash of logical key k
 *   m/<tree>/r                              stored subtree root;  m/c  composite root
 *   m/d                                     dirty-page journal: pages whose record may be stale
 *   s/<name>                                system record, stored raw (seal config, keyring)
 * An absent page record or root means "empty": a fresh backend needs no initialisation.
 */
import { InvalidRequest } from '../core/errors.js';
import type { Location, Tree } from '../core/merkle.js';
import type { WalOp } from '../core/wal.js';
import type { ReadView } from './backend.js';

export const KeyClass = { replicated: 'replicated', local: 'local', node: 'node' } as const;
export type KeyClass = (typeof KeyClass)[keyof typeof KeyClass];

const LOCAL = 'local/';
const NODE = 'node/';

/** The class of a logical key: `local/...` local, `node/...` node, anything else replicated. */
export function classify(key: string): KeyClass {
  if (key.startsWith(LOCAL)) return KeyClass.local;
  if (key.startsWith(NODE)) return KeyClass.node;
  return KeyClass.replicated;
}

/** The Merkle subtree of a class; node-class keys are in no tree (and in no WAL entry). */
export function treeOf(cls: KeyClass): Tree | undefined {
  switch (cls) {
    case KeyClass.replicated:
      return 1;
    case KeyClass.local:
      return 2;
    case KeyClass.node:
      return undefined;
  }
}

/** Rejects keys that cannot round-trip through UTF-8 (and so through the WAL codec). */
export function assertLogicalKey(key: string): void {
  if (key.length === 0) throw new InvalidRequest('storage key must not be empty');
  if (Buffer.from(key, 'utf8').toString('utf8') !== key) throw new InvalidRequest('storage key is not valid UTF-8');
}

function hex2(n: number): string {
  return n.toString(16).padStart(2, '0');
}

/**
 * The smallest key above every key that starts with `prefix`, for a prefix ending in '/': '0' is
 * the character after '/', so the range is exact for any key bytes.
 */
export function dirEnd(prefix: string): string {
  if (!prefix.endsWith('/')) throw new RangeError(`not a directory prefix: ${prefix}`);
  return prefix.slice(0, -1) + '0';
}

export const Keys = {
  valuePrefix: 'v/',
  value: (key: string): string => 'v/' + key,
  logicalOf: (physical: string): string => physical.slice(2),

  walPrefix: 'w/',
  wal: (index: bigint): string => 'w/' + index.toString(16).padStart(16, '0'),
  walIndexOf: (physical: string): bigint => BigInt('0x' + physical.slice(2)),
  walMeta: 'wm',
  /**
   * Rewritten by every batch that writes data outside the WAL (a Merkle sync's install, a wipe):
   * HA standbys watch it. Between the entries and the meta in key order ('w/' < 'wi' < 'wm'), so
   * one range read takes the entries since an index, the mark and the meta (read-follow.ts).
   */
  installMark: 'wi',

  merklePrefix: 'm/',
  page: (tree: Tree, page: number): string => `m/${tree}/p/${hex2(page)}`,
  pagePrefix: (tree: Tree): string => `m/${tree}/p/`,
  leaf: (tree: Tree, loc: Location, key: string): string => `m/${tree}/l/${hex2(loc.page)}${hex2(loc.subpage)}/${key}`,
  /** Every leaf of a tree, of one page, or of one subpage. */
  leafPrefix: (tree: Tree, page?: number, subpage?: number): string =>
    page === undefined ? `m/${tree}/l/` : subpage === undefined ? `m/${tree}/l/${hex2(page)}` : `m/${tree}/l/${hex2(page)}${hex2(subpage)}/`,
  treeRoot: (tree: Tree): string => `m/${tree}/r`,
  compositeRoot: 'm/c',
  dirtyPages: 'm/d',

  systemPrefix: 's/',
  system: (name: string): string => 's/' + name,
} as const;

/**
 * Logical keys of replication records kept in the local class: replicated to DR secondaries (so a
 * promoted one holds them), never to performance secondaries.
 */
export const LocalKeys = {
  performanceFiltersPrefix: 'local/replication/performance/filters/',
  /** The paths filter of one performance secondary id. */
  performanceFilter: (secondaryId: string): string => 'local/replication/performance/filters/' + secondaryId,
} as const;

/** The parts of a leaf key, or undefined if `physical` is not one. */
export function parseLeaf(physical: string): { tree: Tree; loc: Location; key: string } | undefined {
  const m = /^m\/([12])\/l\/([0-9a-f]{2})([0-9a-f]{2})\/(.+)$/s.exec(physical);
  if (m === null) return undefined;
  const [, t, p, s, key] = m;
  if (t === undefined || p === undefined || s === undefined || key === undefined) return undefined;
  return { tree: t === '1' ? 1 : 2, loc: { page: parseInt(p, 16), subpage: parseInt(s, 16) }, key };
}

/** Throws InvalidRequest unless every op's key is of the wanted kind: node class, or a tree class. */
export function assertClass(ops: readonly WalOp[], want: 'tree' | 'node'): void {
  for (const op of ops) {
    const isNode = classify(op.key) === KeyClass.node;
    if (isNode !== (want === 'node')) {
      throw new InvalidRequest(want === 'node' ? `"${op.key}" is not a node-class key` : `node-class key "${op.key}" cannot be replicated`);
    }
  }
}

/** Vault's list over logical keys in `view`; skips over each child directory instead of reading it. */
export async function listChildren(view: ReadView, prefix: string): Promise<string[]> {
  if (prefix !== '' && !prefix.endsWith('/')) throw new InvalidRequest('list prefix must end with "/"');
  const base = Keys.value(prefix);
  const end = dirEnd(base);
  const out: string[] = [];
  let gte = base;
  for (;;) {
    let next: string | undefined;
    for await (const [k] of view.iterate({ gte, lt: end })) {
      const rest = k.slice(base.length);
      const slash = rest.indexOf('/');
      if (slash === -1) {
        out.push(rest);
        continue;
      }
      out.push(rest.slice(0, slash + 1));
      next = base + rest.slice(0, slash) + '0'; // '0' follows '/': the first key past this directory
      break;
    }
    if (next === undefined) return out;
    gte = next;
  }
}
