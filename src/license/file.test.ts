import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidReason } from './license.js';
import { loadLicense, writeDevLicense } from './file.js';

const now = new Date('2025-03-01T12:00:00Z');
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-license-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeDevLicense and loadLicense', () => {
  it('creates missing directories and writes a license that the written key verifies', async () => {
    const target = join(dir, 'a', 'b');
    const written = await writeDevLicense(target, { now });
    expect(written.licensePath).toBe(join(target, 'license.json'));
    expect(written.issuerPubPath).toBe(join(target, 'issuer.pub'));
    const pub = (await readFile(written.issuerPubPath, 'utf8')).trim();
    expect(pub).toBe(written.issuerPublicKey);
    const status = await loadLicense(written.licensePath, [pub], now);
    expect(status.valid).toBe(true);
    expect((await stat(written.licensePath)).isFile()).toBe(true);
  });

  it('replaces an earlier development license and key', async () => {
    const first = await writeDevLicense(dir, { now });
    const second = await writeDevLicense(dir, { now });
    expect(second.issuerPublicKey).not.toBe(first.issuerPublicKey);
    expect((await loadLicense(second.licensePath, [first.issuerPublicKey], now)).valid).toBe(false);
    expect((await loadLicense(second.licensePath, [second.issuerPublicKey], now)).valid).toBe(true);
  });

  it('reports no path or an unreadable file as a missing license', async () => {
    const none = await loadLicense(undefined, [], now);
    expect(!none.valid && none.reason).toBe(InvalidReason.missing);
    const absent = await loadLicense(join(dir, 'nope.json'), [], now);
    expect(!absent.valid && absent.reason).toBe(InvalidReason.missing);
    expect(!absent.valid && absent.detail).toContain('ENOENT');
  });
});
