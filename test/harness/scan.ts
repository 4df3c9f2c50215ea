/**
 * Raw-byte search of every file under a directory, for at-rest checks: a secret that reaches
 * LevelDB unencrypted shows up in the write-ahead log or an SST file as its UTF-8 bytes.
 *
 *   const { findings, files, bytes } = await scanForStrings(node.storageDir, { marker, rootToken });
 *   expect(findings).toEqual([]);
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Finding {
  readonly file: string;
  readonly label: string;
  readonly offset: number;
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

/** Every occurrence's first offset per (file, needle); `files` and `bytes` prove something was read. */
export async function scanForStrings(
  dir: string,
  needles: Readonly<Record<string, string>>,
): Promise<{ findings: Finding[]; files: number; bytes: number }> {
  const findings: Finding[] = [];
  let bytes = 0;
  const files = await listFiles(dir);
  for (const file of files) {
    const content = await readFile(file);
    bytes += content.length;
    for (const [label, needle] of Object.entries(needles)) {
      if (needle === '') throw new Error(`needle "${label}" is empty`);
      const offset = content.indexOf(Buffer.from(needle, 'utf8'));
      if (offset >= 0) findings.push({ file, label, offset });
    }
  }
  return { findings, files: files.length, bytes };
}
