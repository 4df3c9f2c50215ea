/**
 * Rendering of answers the way Vault's CLI shows them: aligned "Key  Value" tables, the whole
 * envelope with `-format=json`, or one raw field with `-field=NAME`.
 *
 *   ctx.out(table([['a', '1']], ['Key', 'Value']));
 *   return printSecret(ctx, envelope, { format: 'table' });
 */
import type { Envelope } from '../api/index.js';
import type { Output } from './io.js';

export const Format = { table: 'table', json: 'json' } as const;
export type Format = (typeof Format)[keyof typeof Format];
export const formats: readonly Format[] = [Format.table, Format.json];

export interface PrintOptions {
  readonly format: Format;
  readonly field?: string | undefined;
}

/** Columns padded to the widest cell plus four spaces, as Vault's columnize does. */
export function table(rows: readonly (readonly [string, string])[], header?: readonly [string, string]): string {
  const all = header ? [header, [dashes(header[0]), dashes(header[1])] as const, ...rows] : rows;
  const width = Math.max(0, ...all.map(([key]) => key.length));
  return all.map(([key, value]) => `${key.padEnd(width)}    ${value}`.trimEnd()).join('\n') + '\n';
}

/** Any number of columns under a header and its dashes, padded as `table` pads two. */
export function columns(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, header.map(dashes), ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('    ').trimEnd()).join('\n') + '\n';
}

function dashes(title: string): string {
  return '-'.repeat(title.length);
}

/** Strings as they are; null as "n/a"; anything else as compact JSON. */
export function renderValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return 'n/a';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** The fields a secret shows in table form: lease, auth and wrapping facts, then data by key. */
export function secretFields(env: Envelope<Record<string, unknown>>): Map<string, unknown> {
  const fields = new Map<string, unknown>();
  if (env.lease_duration > 0) {
    if (env.lease_id) {
      fields.set('lease_id', env.lease_id);
      fields.set('lease_duration', `${env.lease_duration}s`);
      fields.set('lease_renewable', env.renewable);
    } else fields.set('refresh_interval', `${env.lease_duration}s`);
  }
  if (env.auth) {
    fields.set('token', env.auth.client_token);
    fields.set('token_accessor', env.auth.accessor);
    fields.set('token_duration', `${env.auth.lease_duration}s`);
    fields.set('token_renewable', env.auth.renewable);
    fields.set('token_policies', env.auth.policies ?? []);
  }
  if (env.wrap_info) {
    fields.set('wrapping_token:', env.wrap_info.token);
    fields.set('wrapping_accessor:', env.wrap_info.accessor);
    fields.set('wrapping_token_ttl:', `${env.wrap_info.ttl}s`);
    fields.set('wrapping_token_creation_time:', env.wrap_info.creation_time);
    fields.set('wrapping_token_creation_path:', env.wrap_info.creation_path);
    if (env.wrap_info.wrapped_accessor) fields.set('wrapped_accessor:', env.wrap_info.wrapped_accessor);
  }
  const data = env.data ?? {};
  for (const key of Object.keys(data).sort()) fields.set(key, data[key]);
  return fields;
}

/**
 * Writes one field's value with no decoration, so `$(tessera read -field=x ...)` gets exactly
 * the value. A newline follows only on a terminal, as Vault does. Returns the exit code.
 */
export function printField(stdout: Output, stderr: Output, fields: ReadonlyMap<string, unknown>, name: string): number {
  // Wrapping rows carry Vault's trailing colon in their names; -field takes either spelling.
  const key = [name, `${name}:`].find((k) => fields.has(k));
  if (key === undefined) {
    stderr.write(`Field "${name}" not present in secret\n`);
    return 1;
  }
  stdout.write(renderValue(fields.get(key)) + (stdout.isTTY ? '\n' : ''));
  return 0;
}

/** True when an answer carries nothing to show but warnings (no data, auth or wrapping). */
export function onlyWarnings(env: Envelope<Record<string, unknown>>): boolean {
  const data = env.data;
  return !env.auth && !env.wrap_info && (data === null || data === undefined || Object.keys(data).length === 0);
}

/** A secret in the chosen form; warnings go to stderr so stdout stays parseable. */
export function printSecret(
  stdout: Output,
  stderr: Output,
  env: Envelope<Record<string, unknown>>,
  options: PrintOptions,
): number {
  const fields = secretFields(env);
  if (options.field !== undefined) return printField(stdout, stderr, fields, options.field);
  if (options.format === Format.json) {
    stdout.write(json(env));
    return 0;
  }
  printWarnings(stderr, env.warnings);
  const rows = [...fields].map(([key, value]) => [key, renderValue(value)] as const);
  stdout.write(table(rows, ['Key', 'Value']));
  return 0;
}

/** Vault's warning block, word for word, so scripts that grep for it keep working. */
export function printWarnings(out: Output, warnings: readonly string[] | null | undefined): void {
  if (!warnings || warnings.length === 0) return;
  out.write('WARNING! The following warnings were returned from Vault:\n\n');
  for (const w of warnings) out.write(`  * ${w}\n`);
  out.write('\n');
}
