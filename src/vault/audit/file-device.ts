/**
 * The `file` audit device (Vault's builtin/audit/file/backend.go): its options, where its file may
 * be, and its writes. A file lives only under the node's audit directory: a relative `file_path`
 * is resolved there, and an absolute one, a `..`, or a symbolic link (the file itself or a
 * directory on the way) that leaves it is refused with the reason. `stdout` and `discard` write no
 * file. The file is opened (created with `mode`) when the device is, so an unopenable one is
 * refused at enable; a write that fails closes, reopens and tries once more, as Vault's does.
 *
 *   const opts = fileOptions({ file_path: 'vault.log' }, '/var/lib/tessera/audit');
 *   const dev = await FileDevice.open(opts);   // InvalidRequest when it cannot be opened
 *   await dev.write('{"type":"request",...}\n');
 *   await dev.reopen();                        // SIGHUP: log rotation
 */
import { constants } from 'node:fs';
import { mkdir, open, realpath, type FileHandle } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { InvalidRequest } from '../../core/errors.js';

export interface FileOptions {
  /** An absolute path inside the audit directory, or `stdout`, or `discard`. */
  readonly target: string;
  /** The audit directory it must stay in (undefined: the node has none; only stdout and discard). */
  readonly dir: string | undefined;
  /** File mode; 0 leaves the mode of an existing file alone ("0000"). */
  readonly mode: number;
  readonly raw: boolean;
  readonly hmacAccessor: boolean;
  readonly prefix: string;
}

/** Go's strconv.ParseBool, with its error text. */
function goBool(raw: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  throw new InvalidRequest(`strconv.ParseBool: parsing ${JSON.stringify(raw.slice(0, 64))}: invalid syntax`);
}

const inside = (dir: string, p: string): boolean => {
  const rel = relative(dir, p);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
};

/** The device's options as Vault's file backend reads them; InvalidRequest with Vault's text for bad ones. */
export function fileOptions(options: Readonly<Record<string, string>>, auditDir: string | undefined): FileOptions {
  let path = options.file_path ?? options.path;
  if (path === undefined || path === '') throw new InvalidRequest('file_path is required');
  if (path.toLowerCase() === 'stdout') path = 'stdout';
  if (path.toLowerCase() === 'discard') path = 'discard';
  const format = options.format ?? 'json';
  if (format === 'jsonx') throw new InvalidRequest('jsonx formatting is not supported, consider switching to json by omitting "format" or setting it to "json"');
  if (format !== 'json') throw new InvalidRequest(`unknown format type ${JSON.stringify(format.slice(0, 64))}`);
  const hmacAccessor = options.hmac_accessor === undefined ? true : goBool(options.hmac_accessor);
  const raw = options.log_raw === undefined ? false : goBool(options.log_raw);
  let mode = 0o600;
  if (options.mode !== undefined) {
    if (!/^[0-7]{1,11}$/.test(options.mode)) throw new InvalidRequest(`strconv.ParseUint: parsing ${JSON.stringify(options.mode.slice(0, 64))}: invalid syntax`);
    const m = parseInt(options.mode, 8);
    if (m > 0o777) throw new InvalidRequest('file mode does not represent a regular file');
    // Never executable (Vault strips these bits too).
    mode = m & ~0o111;
  }
  const common = { mode, raw, hmacAccessor, prefix: options.prefix ?? '' };
  if (path === 'stdout' || path === 'discard') return { target: path, dir: auditDir, ...common };
  if (/[\u0000]/.test(path)) throw new InvalidRequest('file_path must not contain a NUL character');
  if (auditDir === undefined) {
    throw new InvalidRequest('this node has no audit directory (config "audit_dir"): only file_path "stdout" or "discard" can be used');
  }
  const target = resolve(auditDir, path);
  if (!inside(auditDir, target)) {
    throw new InvalidRequest(`file_path ${JSON.stringify(path.slice(0, 256))} is outside this node's audit directory ${auditDir}: audit files are written only under it (give a path relative to it)`);
  }
  return { target, dir: auditDir, ...common };
}

/** Why an open failed, in words (the errno code, and what it means where it is a choice of ours). */
function why(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') return 'the file is a symbolic link';
  return code ?? (e as Error).message;
}

/** Opens the file for appending, refusing symbolic links that leave the audit directory; InvalidRequest with the reason. */
async function openFile(o: FileOptions): Promise<FileHandle> {
  const dir = o.dir as string;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const realDir = await realpath(dir);
    await mkdir(dirname(o.target), { recursive: true, mode: 0o700 });
    const parent = await realpath(dirname(o.target));
    if (parent !== realDir && !inside(realDir, parent)) {
      throw new InvalidRequest(`file_path resolves outside this node's audit directory ${dir} through a symbolic link`);
    }
    const fh = await open(join(parent, basename(o.target)), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, o.mode === 0 ? 0o600 : o.mode);
    try {
      const st = await fh.stat();
      if (!st.isFile() && !st.isCharacterDevice()) throw new InvalidRequest('the file is not a regular file');
      if (o.mode !== 0) await fh.chmod(o.mode);
    } catch (e) {
      await fh.close();
      throw e;
    }
    return fh;
  } catch (e) {
    const reason = e instanceof InvalidRequest ? e.messages.join('; ') : why(e);
    throw new InvalidRequest(`sanity check failed; unable to open ${JSON.stringify(o.target)} for writing: ${reason}`, { cause: e });
  }
}

export class FileDevice {
  private constructor(
    readonly options: FileOptions,
    private fh: FileHandle | undefined,
  ) {}

  /** Opens the device's file (none for stdout and discard); InvalidRequest with the reason. */
  static async open(o: FileOptions): Promise<FileDevice> {
    return new FileDevice(o, o.target === 'stdout' || o.target === 'discard' ? undefined : await openFile(o));
  }

  /** Lines waiting for the write in flight to finish, in order. */
  private queue: { readonly bytes: Buffer; readonly done: (e?: unknown) => void }[] = [];
  private writing = false;

  /** Appends one line; resolves once the write completed. Throws when it cannot be written. */
  async write(line: string): Promise<void> {
    const { target, prefix } = this.options;
    if (target === 'discard') return;
    const bytes = Buffer.from(prefix + line);
    if (target === 'stdout') {
      await new Promise<void>((res, rej) => process.stdout.write(bytes, (e) => (e ? rej(e) : res())));
      return;
    }
    await new Promise<void>((resolve, reject) => {
      this.queue.push({ bytes, done: (e) => (e === undefined ? resolve() : reject(e)) });
      if (!this.writing) void this.flush();
    });
  }

  /**
   * Writes the queued lines in order, all that queued during one write in the next (one system
   * call for many concurrent requests, as a group commit); each caller resolves once the write
   * holding its line completed, and every caller of a failed write gets its error.
   */
  private async flush(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        const bytes = batch.length === 1 ? (batch[0] as (typeof batch)[number]).bytes : Buffer.concat(batch.map((b) => b.bytes));
        let error: unknown;
        try {
          await this.append(bytes);
        } catch (e) {
          error = e ?? new Error('audit write failed');
        }
        for (const b of batch) b.done(error);
      }
    } finally {
      this.writing = false;
    }
  }

  /** One append, the file opened again once if it fails (moved, closed under us). */
  private async append(bytes: Buffer): Promise<void> {
    try {
      this.fh ??= await openFile(this.options);
      await this.writeAll(this.fh, bytes);
    } catch {
      await this.drop();
      this.fh = await openFile(this.options);
      await this.writeAll(this.fh, bytes);
    }
  }

  private async writeAll(fh: FileHandle, bytes: Buffer): Promise<void> {
    let off = 0;
    while (off < bytes.length) off += (await fh.write(bytes, off)).bytesWritten;
  }

  /** Closes the file and opens it again at its path (a rotated file is left to its mover). */
  async reopen(): Promise<void> {
    if (this.options.target === 'stdout' || this.options.target === 'discard') return;
    await this.drop();
    this.fh = await openFile(this.options);
  }

  private async drop(): Promise<void> {
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.drop();
  }
}
