import { InvalidRequest } from '../core/errors.js';
import { Keyring } from './keyring.js';
import { KEYRING_RECORD_KEY, openRecord } from './keyring-record.js';
import { RecordName, SealManager, type KeyringCommit } from './manager.js';
import { decodeShare } from './shares.js';
import { MapRecords } from '../../test/support/map-records.js';

const aad = Buffer.from('logical/x');

/** A primary and a DR-style secondary that adopted it, with what the primary committed. */
async function pair() {
  const records = new MapRecords();
  const primary = new SealManager(records);
  const init = await primary.init({ secret_shares: 3, secret_threshold: 2 });
  await primary.unseal(init.keys[0]!);
  await primary.unseal(init.keys[1]!);
  const commits: KeyringCommit[] = [];
  const commit = async (change: KeyringCommit): Promise<void> => {
    commits.push(change);
    for (const s of change.system) await records.put(s.name, s.value);
  };
  const secondaryRecords = new MapRecords();
  const secondary = new SealManager(secondaryRecords);
  await secondary.init({ secret_shares: 1, secret_threshold: 1 });
  await secondary.adoptFromPrimaryUnsealed(await primary.exportForSecondary(), primary.exportKeyring());
  /** What a secondary's storage batch does with the primary's record. */
  const apply = async (change: KeyringCommit): Promise<void> => {
    const { system, after } = secondary.applyReplicated(change.record.value);
    for (const s of system) await secondaryRecords.put(s.name, s.value);
    after();
  };
  return { records, primary, init, commits, commit, secondary, secondaryRecords, apply };
}

describe('rotation through the replicated keyring record', () => {
  it('a secondary that applies two rotations (or only the last) reads every term, and unseals after a restart with the primary shares', async () => {
    const p = await pair();
    const ct1 = p.primary.cipher().encrypt(Buffer.from('one'), aad);
    expect(await p.primary.rotate(p.commit, {}, new Date('2026-01-01T00:00:00Z'))).toBe(2);
    const ct2 = p.primary.cipher().encrypt(Buffer.from('two'), aad);
    expect(await p.primary.rotate(p.commit, {}, new Date())).toBe(3);
    const ct3 = p.primary.cipher().encrypt(Buffer.from('three'), aad);
    expect(p.commits[0]!.record.key).toBe(KEYRING_RECORD_KEY);
    // The record is sealed under the first term: a secondary that missed the first one opens it.
    expect(p.commits[1]!.record.value.readUInt32BE(1)).toBe(1);
    await p.apply(p.commits[1]!);
    for (const [ct, v] of [[ct1, 'one'], [ct2, 'two'], [ct3, 'three']] as const) expect(p.secondary.cipher().decrypt(ct, aad).toString()).toBe(v);
    expect(p.secondary.cipher().activeTerm).toBe(3);

    await p.secondary.seal();
    await p.secondary.unseal(p.init.keys[2]!);
    await p.secondary.unseal(p.init.keys[0]!);
    expect(p.secondary.cipher().decrypt(ct3, aad).toString()).toBe('three');
    expect(p.secondary.cipher().decrypt(ct1, aad).toString()).toBe('one');
  });

  it('a rotation whose commit fails changes neither the live keyring nor the stored one', async () => {
    const p = await pair();
    const before = p.records.data.get(RecordName.keyring);
    await expect(p.primary.rotate(async () => { throw new Error('disk full'); }, {}, new Date())).rejects.toThrow('disk full');
    expect(p.primary.cipher().activeTerm).toBe(1);
    expect(p.records.data.get(RecordName.keyring)).toEqual(before);
  });
});

describe('rotation without the root key (a DR secondary promoted without a restart)', () => {
  it('commits the record only; after a restart the stored keyring opens the record, which gives every term', async () => {
    const p = await pair();
    const commits: KeyringCommit[] = [];
    expect(await p.secondary.rotate(async (change) => {
      commits.push(change);
      for (const s of change.system) await p.secondaryRecords.put(s.name, s.value);
    }, {}, new Date())).toBe(2);
    const ct = p.secondary.cipher().encrypt(Buffer.from('under term 2'), aad);
    await p.secondary.seal();
    await p.secondary.unseal(p.init.keys[0]!);
    await p.secondary.unseal(p.init.keys[1]!);
    expect(p.secondary.cipher().terms).toEqual([1]);
    p.secondary.adoptRecord(openRecord(p.secondary.cipher(), commits[0]!.record.value));
    expect(p.secondary.cipher().decrypt(ct, aad).toString()).toBe('under term 2');
    expect(p.secondary.cipher().activeTerm).toBe(2);
  });
});

describe('rekey', () => {
  it('refuses shares that do not unseal the node and changes nothing', async () => {
    const p = await pair();
    const other = new SealManager(new MapRecords());
    const foreign = await other.init({ secret_shares: 3, secret_threshold: 2 });
    await expect(p.primary.prepareRekey([decodeShare(foreign.keys[0]!), decodeShare(foreign.keys[1]!)], { type: 'shamir', secret_shares: 1, secret_threshold: 1 })).rejects.toThrow(InvalidRequest);
  });

  it('the new shares unseal the primary and the secondary that applied the record; the old ones no longer do', async () => {
    const p = await pair();
    const ct = p.primary.cipher().encrypt(Buffer.from('kept'), aad);
    const config = { type: 'shamir', secret_shares: 5, secret_threshold: 3 } as const;
    const next = await p.primary.prepareRekey([decodeShare(p.init.keys[0]!), decodeShare(p.init.keys[2]!)], config);
    expect(next.shares).toHaveLength(5);
    await p.primary.commitRekey(next.rootKey, config, p.commit, {});
    await p.apply(p.commits[0]!);
    for (const [seal, records] of [[p.primary, p.records], [p.secondary, p.secondaryRecords]] as const) {
      await seal.seal();
      // The old shares (the config now asks for three) no longer combine to the root key.
      await seal.unseal(p.init.keys[0]!);
      await seal.unseal(p.init.keys[1]!);
      await expect(seal.unseal(p.init.keys[2]!)).rejects.toThrow(InvalidRequest);
      for (const s of next.shares.slice(1, 4)) await seal.unseal(s.toString('hex'));
      expect(seal.cipher().decrypt(ct, aad).toString()).toBe('kept');
      expect(JSON.parse(records.data.get(RecordName.sealConfig)!.toString())).toEqual(config);
    }
    // The primary, unsealed with the new shares, can rotate again.
    expect(await p.primary.rotate(p.commit, {}, new Date())).toBe(2);
  });

  it('a node that adopts a record sealed under another root key drops the root key it held', async () => {
    const p = await pair();
    await p.secondary.seal();
    await p.secondary.unseal(p.init.keys[0]!);
    await p.secondary.unseal(p.init.keys[1]!);
    const config = { type: 'shamir', secret_shares: 1, secret_threshold: 1 } as const;
    const next = await p.primary.prepareRekey([decodeShare(p.init.keys[0]!), decodeShare(p.init.keys[1]!)], config);
    await p.primary.commitRekey(next.rootKey, config, p.commit, {});
    await p.apply(p.commits[0]!);
    // Rotating with the stale root key would seal the keyring where the new shares cannot open it:
    // the stored sealed keyring stays the one the new shares open.
    expect(await p.secondary.rotate(async (change) => {
      for (const s of change.system) await p.secondaryRecords.put(s.name, s.value);
    }, {}, new Date())).toBe(2);
    expect(Keyring.openWith(p.secondaryRecords.data.get(RecordName.keyring)!, next.rootKey).terms).toEqual([1]);
  });
});
