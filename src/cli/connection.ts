/**
 * How a command reaches a node: address, token, namespace, TLS and response wrapping, from flags,
 * then TESSERA_* variables, then VAULT_* variables (an empty value counts as unset), as the vault
 * CLI resolves them. The token falls back to the token helper file (~/.vault-token) that `login`
 * writes, as vault's default token helper does.
 *
 *   const options = connectionOptions(flags, io.env); // ConnectionOptions for TesseraClient
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ConnectionOptions } from '../api/index.js';
import { UsageError } from './errors.js';

export const DEFAULT_ADDR = 'http://127.0.0.1:8200';
export const TOKEN_FILE = '.vault-token';

export interface ClientFlags {
  readonly address?: string;
  readonly namespace?: string;
  readonly caCert?: string;
  readonly caPath?: string;
  readonly tlsSkipVerify?: boolean;
  readonly wrapTtl?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** TESSERA_<name>, else VAULT_<name>; an empty value counts as unset. */
export function fromEnv(env: Env, name: string): string | undefined {
  return env[`TESSERA_${name}`] || env[`VAULT_${name}`] || undefined;
}

/** The token helper file: $HOME/.vault-token (HOME from the environment when set). */
export function tokenFilePath(env: Env): string {
  return join(env['HOME'] || homedir(), TOKEN_FILE);
}

/** TESSERA_TOKEN, VAULT_TOKEN, then the token helper file; undefined when none has one. */
export function resolveToken(env: Env): string | undefined {
  const fromVars = fromEnv(env, 'TOKEN');
  if (fromVars !== undefined) return fromVars;
  try {
    return readFileSync(tokenFilePath(env), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

export function connectionOptions(flags: ClientFlags, env: Env): ConnectionOptions {
  const caCert = flags.caCert ?? fromEnv(env, 'CACERT');
  const caPath = flags.caPath ?? fromEnv(env, 'CAPATH');
  const skip = flags.tlsSkipVerify === true || parseBool('SKIP_VERIFY', fromEnv(env, 'SKIP_VERIFY'));
  const ca = [...(caCert !== undefined ? [readCaFile(caCert)] : []), ...(caPath !== undefined ? readCaDir(caPath) : [])];
  return {
    addr: flags.address ?? fromEnv(env, 'ADDR') ?? DEFAULT_ADDR,
    token: resolveToken(env),
    namespace: flags.namespace ?? fromEnv(env, 'NAMESPACE'),
    wrapTtl: flags.wrapTtl ?? fromEnv(env, 'WRAP_TTL'),
    tls: { ca, insecure: skip },
  };
}

/** Go's strconv.ParseBool, which the vault CLI uses for VAULT_SKIP_VERIFY; unset is false. */
function parseBool(name: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new UsageError(`could not parse ${name}="${value}": expected true or false`);
}

const PEM_CERT = '-----BEGIN CERTIFICATE-----';

function readCaFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read the CA certificate ${path}: ${(e as { code?: string }).code ?? String(e)}`);
  }
  if (!text.includes(PEM_CERT)) throw new UsageError(`${path} holds no PEM certificate`);
  return text;
}

/** Every file of the directory that holds a PEM certificate (as go-rootcerts loads a CA path). */
function readCaDir(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    throw new UsageError(`cannot read the CA directory ${dir}: ${(e as { code?: string }).code ?? String(e)}`);
  }
  const pems = names
    .map((name) => join(dir, name))
    .filter((p) => statSync(p, { throwIfNoEntry: false })?.isFile() === true)
    .map((p) => readFileSync(p, 'utf8'))
    .filter((text) => text.includes(PEM_CERT));
  if (pems.length === 0) throw new UsageError(`the CA directory ${dir} holds no PEM certificate`);
  return pems;
}
