import { randomBytes } from 'node:crypto';
import { InvalidRequest, NotInitialized, Sealed } from '../core/errors.js';
import { Keyring } from './keyring.js';
import { RecordName, SealManager, type KeyringCommitter, type SealEvent } from './manager.js';
import { decodeShare } from './shares.js';
import { MapRecords } from '../../test/support/map-records.js';

function nonces(): () => string {
  let i = 0;
  return () => `attempt-${++i}`;
}

async function initialised(n = 5, t = 3) {
  const records = new MapRecords();
  const seal = new SealManager(records, { newNonce: nonces() });
  const init = await seal.init({ secret_shares: n, secret_threshold: t });
  return { records, seal, init };
}

const aad = Buffer.from('sys/token/x');

/** A committer that writes only the system records (the replicated record needs no storage here). */
function writeSystem(records: MapRecords): KeyringCommitter {
  return async (change) => {
    for (const s of change.system) await records.put(s.name, s.value);
  };
}

describe('SealManager init', () => {
  it('reports an uninitialised node like Vault', async () => {
    const seal = new SealManager(new MapRecords());
    expect(await seal.status()).toEqual({
      type: 'shamir', initialized: false, sealed: true, t: 0, n: 0, progress: 0, nonce: '',
    });
  });

  it('returns n shares in hex and base64, persists config and keyring, stays sealed', async () => {
    const { records, seal, init } = await initialised();
    expect(init.keys).toHaveLength(5);
    expect(init.keys[0]).toMatch(/^[0-9a-f]{66}$/);
    expect(init.keysBase64.map((k) => Buffer.from(k, 'base64').toString('hex'))).toEqual(init.keys);
    expect(init.rootKey.length).toBe(32);
    expect(JSON.parse(records.data.get(RecordName.sealConfig)!.toString())).toEqual({
      type: 'shamir', secret_shares: 5, secret_threshold: 3,
    });
    expect(Keyring.openWith(records.data.get(RecordName.keyring)!, init.rootKey).terms).toEqual([1]);
    expect(await seal.status()).toMatchObject({ initialized: true, sealed: true, t: 3, n: 5, progress: 0, nonce: '' });
    expect(() => seal.cipher()).toThrow(Sealed);
  });

  it('refuses a second init and invalid configurations', async () => {
    const { seal } = await initialised();
    await expect(seal.init({ secret_shares: 5, secret_threshold: 3 })).rejects.toThrow('Vault is already initialized');
    const fresh = new SealManager(new MapRecords());
    await expect(fresh.init({ secret_shares: 3, secret_threshold: 1 })).rejects.toThrow(InvalidRequest);
    await expect(fresh.init({ secret_shares: 2, secret_threshold: 3 })).rejects.toThrow(InvalidRequest);
    expect((await fresh.status()).initialized).toBe(false);
  });

  it('stores no copy of the root key, its shares or the keyring plaintext', async () => {
    const { records, init } = await initialised();
    const keyring = Keyring.openWith(records.data.get(RecordName.keyring)!, init.rootKey);
    const plain = keyring.serialize();
    const keyringKey = plain.subarray(13, 45);
    const needles = [
      init.rootKey, plain, keyringKey,
      Buffer.from(init.rootKey.toString('hex')), Buffer.from(init.rootKey.toString('base64')),
      Buffer.from(keyringKey.toString('hex')), Buffer.from(keyringKey.toString('base64')),
      ...init.keys.map((k) => Buffer.from(k, 'hex')),
    ];
    for (const value of records.data.values()) {
      for (const needle of needles) expect(value.includes(needle)).toBe(false);
    }
  });
});

describe('SealManager unseal', () => {
  it('unseals with t of n shares, mixing hex and base64, in any order', async () => {
    const { seal, init } = await initialised();
    const s1 = await seal.unseal(init.keys[4]!);
    expect(s1).toMatchObject({ sealed: true, progress: 1, nonce: 'attempt-1' });
    const s2 = await seal.unseal(init.keysBase64[1]!);
    expect(s2).toMatchObject({ sealed: true, progress: 2, nonce: 'attempt-1' });
    const s3 = await seal.unseal(init.keys[2]!);
    expect(s3).toMatchObject({ sealed: false, progress: 0, nonce: '' });
    const ct = seal.cipher().encrypt(Buffer.from('v'), aad);
    expect(seal.cipher().decrypt(ct, aad).toString()).toBe('v');
    expect(await seal.unseal('not even a share')).toMatchObject({ sealed: false });
  });

  it('stays sealed with progress below the threshold', async () => {
    const { seal, init } = await initialised();
    await seal.unseal(init.keys[0]!);
    const status = await seal.unseal(init.keys[1]!);
    expect(status).toMatchObject({ sealed: true, progress: 2, t: 3 });
    expect(() => seal.cipher()).toThrow(Sealed);
  });

  it('rejects shares from another init, resets progress and stays sealed', async () => {
    const { seal, init } = await initialised();
    const other = await initialised();
    await seal.unseal(other.init.keys[0]!);
    await seal.unseal(other.init.keys[1]!);
    await expect(seal.unseal(other.init.keys[2]!)).rejects.toThrow(InvalidRequest);
    expect(await seal.status()).toMatchObject({ sealed: true, progress: 0, nonce: '' });
    // A mixed set (2 right, 1 wrong) fails the same way; the right set then works.
    await seal.unseal(init.keys[0]!);
    await seal.unseal(init.keys[1]!);
    await expect(seal.unseal(other.init.keys[2]!)).rejects.toThrow('Unseal failed, invalid key');
    for (const k of init.keys.slice(2)) await seal.unseal(k);
    expect((await seal.status()).sealed).toBe(false);
  });

  it('rejects a share given twice (hex, then base64) without counting it', async () => {
    const { seal, init } = await initialised();
    await seal.unseal(init.keys[0]!);
    await expect(seal.unseal(init.keysBase64[0]!)).rejects.toThrow('share already provided');
    expect(await seal.status()).toMatchObject({ progress: 1, nonce: 'attempt-1' });
  });

  it('rejects undecodable and wrong-length shares, keeping progress', async () => {
    const { seal, init } = await initialised();
    await seal.unseal(init.keys[0]!);
    await expect(seal.unseal('zz-not-a-key!')).rejects.toThrow(InvalidRequest);
    await expect(seal.unseal(init.keys[1]!.slice(0, 64))).rejects.toThrow(InvalidRequest);
    await expect(seal.unseal('')).rejects.toThrow(InvalidRequest);
    expect((await seal.status()).progress).toBe(1);
  });

  it('resetUnseal() discards progress and a new attempt gets a new nonce', async () => {
    const { seal, init } = await initialised();
    await seal.unseal(init.keys[0]!);
    expect(await seal.resetUnseal()).toMatchObject({ progress: 0, nonce: '' });
    const next = await seal.unseal(init.keys[0]!);
    expect(next.progress).toBe(1);
    expect(next.nonce).toMatch(/^attempt-/);
    expect(next.nonce).not.toBe('attempt-1');
  });

  it('works with a single share (shares = threshold = 1): the key is the root key', async () => {
    const { seal, init } = await initialised(1, 1);
    expect(init.keys).toEqual([init.rootKey.toString('hex')]);
    expect(await seal.unseal(init.keysBase64[0]!)).toMatchObject({ sealed: false, t: 1, n: 1 });
  });

  it('needs initialisation first', async () => {
    const seal = new SealManager(new MapRecords());
    await expect(seal.unseal('abcd')).rejects.toThrow(NotInitialized);
    await expect(seal.unsealWithRootKey(randomBytes(32))).rejects.toThrow(NotInitialized);
    await expect(seal.verifyRootKeyShares([])).rejects.toThrow(NotInitialized);
    await expect(seal.exportForSecondary()).rejects.toThrow(NotInitialized);
  });

  it('unseals with the root key, and refuses a wrong one', async () => {
    const { seal, init } = await initialised();
    await expect(seal.unsealWithRootKey(randomBytes(32))).rejects.toThrow(InvalidRequest);
    await expect(seal.unsealWithRootKey(randomBytes(16))).rejects.toThrow(InvalidRequest);
    expect((await seal.unsealWithRootKey(init.rootKey)).sealed).toBe(false);
  });

  it('survives a restart: a new manager over the same records unseals with the same shares', async () => {
    const { records, seal, init } = await initialised();
    await seal.unsealWithRootKey(init.rootKey);
    const ct = seal.cipher().encrypt(Buffer.from('kept'), aad);
    const again = new SealManager(records);
    for (const k of init.keys.slice(0, 3)) await again.unseal(k);
    expect(again.cipher().decrypt(ct, aad).toString()).toBe('kept');
  });
});

describe('SealManager seal, rotate, events', () => {
  it('seal() drops the keyring: cipher() and stale references throw Sealed', async () => {
    const { seal, init } = await initialised();
    await seal.unsealWithRootKey(init.rootKey);
    const stale = seal.cipher();
    await seal.seal();
    expect(() => seal.cipher()).toThrow(Sealed);
    expect(() => stale.encrypt(Buffer.from('x'), aad)).toThrow(Sealed);
    expect((await seal.status()).sealed).toBe(true);
  });

  it('reports transitions to listeners, isolates a throwing one, and unsubscribes', async () => {
    const errors: unknown[] = [];
    const records = new MapRecords();
    const seal = new SealManager(records, { onListenerError: (e) => errors.push(e) });
    const { rootKey } = await seal.init({ secret_shares: 1, secret_threshold: 1 });
    const events: SealEvent[] = [];
    seal.onChange(() => {
      throw new Error('listener bug');
    });
    const off = seal.onChange((e) => events.push(e));
    await seal.unsealWithRootKey(rootKey);
    await seal.seal();
    await seal.seal(); // already sealed: no event
    off();
    await seal.unsealWithRootKey(rootKey);
    expect(events).toEqual([{ type: 'unsealed' }, { type: 'sealed' }]);
    expect(errors).toHaveLength(3);
  });

  it('rotate() persists the new term so it survives a restart', async () => {
    const { records, seal, init } = await initialised();
    await seal.unsealWithRootKey(init.rootKey);
    const old = seal.cipher().encrypt(Buffer.from('old'), aad);
    expect(await seal.rotate(writeSystem(records), {}, new Date())).toBe(2);
    const fresh = seal.cipher().encrypt(Buffer.from('new'), aad);
    expect(fresh.readUInt32BE(1)).toBe(2);
    const again = new SealManager(records);
    await again.unsealWithRootKey(init.rootKey);
    expect(again.cipher().decrypt(old, aad).toString()).toBe('old');
    expect(again.cipher().decrypt(fresh, aad).toString()).toBe('new');
    await seal.seal();
    await expect(seal.rotate(writeSystem(records), {}, new Date())).rejects.toThrow(Sealed);
  });
});

describe('SealManager DR adoption and share verification', () => {
  it('a secondary adopts the primary keyring: primary shares unseal it, its own no longer do', async () => {
    const primary = await initialised(5, 3);
    const secondary = await initialised(3, 2);
    await secondary.seal.unsealWithRootKey(secondary.init.rootKey);
    await primary.seal.unsealWithRootKey(primary.init.rootKey);
    const ct = primary.seal.cipher().encrypt(Buffer.from('replicated'), aad);

    await secondary.seal.adoptFromPrimary(await primary.seal.exportForSecondary());
    expect(await secondary.seal.status()).toMatchObject({ sealed: true, t: 3, n: 5 });
    expect(() => secondary.seal.cipher()).toThrow(Sealed);

    await secondary.seal.unseal(secondary.init.keys[0]!);
    await secondary.seal.unseal(secondary.init.keys[1]!);
    await expect(secondary.seal.unseal(secondary.init.keys[2]!)).rejects.toThrow(InvalidRequest);
    await expect(secondary.seal.unsealWithRootKey(secondary.init.rootKey)).rejects.toThrow(InvalidRequest);

    for (const k of primary.init.keysBase64.slice(1, 4)) await secondary.seal.unseal(k);
    expect(secondary.seal.cipher().decrypt(ct, aad).toString()).toBe('replicated');
  });

  it('refuses a malformed export', async () => {
    const { seal } = await initialised();
    const good = await seal.exportForSecondary();
    await expect(seal.adoptFromPrimary({ ...good, encryptedKeyring: Buffer.from('nope') })).rejects.toThrow(InvalidRequest);
    await expect(
      seal.adoptFromPrimary({ ...good, sealConfig: { type: 'shamir', secret_shares: 2, secret_threshold: 5 } }),
    ).rejects.toThrow(InvalidRequest);
  });

  it('verifyRootKeyShares answers true only for a right set, never throwing on a wrong one', async () => {
    const { seal, init } = await initialised();
    const other = await initialised();
    const shares = init.keys.map(decodeShare);
    expect(await seal.verifyRootKeyShares([shares[3]!, shares[0]!, shares[2]!])).toBe(true);
    expect(await seal.verifyRootKeyShares(shares)).toBe(true);
    expect(await seal.verifyRootKeyShares(shares.slice(0, 2))).toBe(false);
    expect(await seal.verifyRootKeyShares(other.init.keys.slice(0, 3).map(decodeShare))).toBe(false);
    expect(await seal.verifyRootKeyShares([shares[0]!, shares[0]!, shares[1]!])).toBe(false);
    expect(await seal.verifyRootKeyShares([shares[0]!])).toBe(false);
    expect(await seal.verifyRootKeyShares([])).toBe(false);
    expect((await seal.status()).sealed).toBe(true);
  });
});

describe('SealManager concurrency', () => {
  it('serialises concurrent unseal calls so every share counts once', async () => {
    const { seal, init } = await initialised(5, 3);
    const results = await Promise.all(init.keys.slice(0, 3).map((k) => seal.unseal(k)));
    expect(results.map((r) => r.progress)).toEqual([1, 2, 0]);
    expect(results[2]!.sealed).toBe(false);
  });
});

describe('SealManager.adoptFromPrimaryUnsealed', () => {
  it('serves with the shipped keyring at once, and after a seal unseals only with the primary shares', async () => {
    const primary = await initialised(3, 2);
    await primary.seal.unseal(primary.init.keys[0] as string);
    await primary.seal.unseal(primary.init.keys[1] as string);
    const ct = primary.seal.cipher().encrypt(Buffer.from('payload'), aad);

    const secondary = await initialised(1, 1);
    await secondary.seal.adoptFromPrimaryUnsealed(await primary.seal.exportForSecondary(), primary.seal.exportKeyring());
    expect((await secondary.seal.status()).sealed).toBe(false);
    expect(secondary.seal.cipher().decrypt(ct, aad).toString()).toBe('payload');
    // Without the root key a rotation keeps the stored sealed keyring (the replicated record carries the term).
    expect(await secondary.seal.rotate(writeSystem(secondary.records), {}, new Date())).toBe(2);

    await secondary.seal.seal();
    await expect(secondary.seal.unseal(secondary.init.keys[0] as string)).rejects.toThrow(InvalidRequest);
    await secondary.seal.unseal(primary.init.keys[2] as string);
    const status = await secondary.seal.unseal(primary.init.keys[0] as string);
    expect(status.sealed).toBe(false);
    expect(secondary.seal.cipher().decrypt(ct, aad).toString()).toBe('payload');
  });
});
