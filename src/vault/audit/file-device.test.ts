/**
 * The file device's grouped appends, on a real file: concurrent lines land in call order, each
 * caller resolves only once its own line is in the file, and the lines that queued behind a write
 * go out together in the next one.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { FileDevice, fileOptions } from './file-device.js';

describe('FileDevice appends', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(os.tmpdir(), 'tessera-audit-file-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes concurrent lines in call order, each resolved once it is in the file, the queued ones in one write', async () => {
    const dev = await FileDevice.open(fileOptions({ file_path: 'a.log' }, dir));
    const file = join(dir, 'a.log');
    const lines = Array.from({ length: 100 }, (_, i) => `{"n":${i}}\n`);
    const seenAt: string[] = [];
    await Promise.all(
      lines.map((l, i) =>
        dev.write(l).then(async () => {
          const text = await readFile(file, 'utf8');
          expect(text).toContain(l);
          if (i <= 1) seenAt[i] = text;
        }),
      ),
    );
    expect(await readFile(file, 'utf8')).toBe(lines.join(''));
    // The first line went alone; the 99 that queued meanwhile went in the next write together.
    expect(seenAt[1]).toBe(lines.join(''));
    await dev.close();
  });

  it('keeps writing after a write of a closed handle: the file is opened again', async () => {
    const dev = await FileDevice.open(fileOptions({ file_path: 'b.log' }, dir));
    await dev.write('one\n');
    await dev.close();
    await Promise.all([dev.write('two\n'), dev.write('three\n')]);
    expect(await readFile(join(dir, 'b.log'), 'utf8')).toBe('one\ntwo\nthree\n');
    await dev.close();
  });
});
