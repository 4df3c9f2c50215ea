/**
 * Static pages outside the `/v1/` API (the topology dashboard at `/ui/`), as declarations: a URL
 * prefix, a directory, and a fixed allow-list of the names served. Only listed names are ever
 * read (at start-up, into memory), so no request can name another file: there is no path to
 * resolve, hence no traversal. Open like seal-status (a page holds no data; what it shows comes
 * from the status endpoints it polls, with a token where they need one), GET and HEAD only, on
 * every role and while sealed.
 *
 *   const site = loadStaticSite({ prefix: '/ui', dir, files: { '': { file: 'index.html', contentType: 'text/html' } } });
 *   serveStatic([site], 'GET', '/ui/') // { status: 200, headers: {...}, body: <Buffer> }
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface StaticFile {
  /** The file's name inside the site's directory. */
  readonly file: string;
  /** Without charset: text types get `; charset=utf-8`. */
  readonly contentType: string;
}

export interface StaticSiteSpec {
  /** The URL prefix, without a trailing slash: `/ui`. `/ui` itself redirects to `/ui/`. */
  readonly prefix: string;
  /** Absolute directory the listed files are read from. */
  readonly dir: string;
  /** URL name under `prefix/` -> file; `''` is the index. Nothing else is served. */
  readonly files: Readonly<Record<string, StaticFile>>;
}

export interface StaticSite {
  readonly prefix: string;
  /** Name -> content and type; a listed file missing on disk is absent here (a 404). */
  readonly pages: ReadonlyMap<string, { readonly body: Buffer; readonly contentType: string }>;
  /** Listed files that could not be read (for one warning at start-up). */
  readonly missing: readonly string[];
}

export interface StaticReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Omitted for HEAD (the headers still give its length). */
  readonly body: Buffer | undefined;
}

/**
 * Headers of every answer under a site's prefix, errors included: no script but the site's own
 * files (no inline script, no eval), no framing, no MIME sniffing, no referrer leaking a node's
 * address, and no caching (a node upgrade changes the files).
 */
export const STATIC_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-cache',
};

const TEXT = /^(text\/|application\/(javascript|json)|image\/svg\+xml)/;

export function loadStaticSite(spec: StaticSiteSpec): StaticSite {
  const pages = new Map<string, { body: Buffer; contentType: string }>();
  const missing: string[] = [];
  for (const [name, f] of Object.entries(spec.files)) {
    if (f.file.includes('/') || f.file.includes('\\') || f.file.startsWith('.')) throw new Error(`static file "${f.file}" must be a plain name`);
    try {
      pages.set(name, {
        body: readFileSync(path.join(spec.dir, f.file)),
        contentType: TEXT.test(f.contentType) ? `${f.contentType}; charset=utf-8` : f.contentType,
      });
    } catch {
      missing.push(f.file);
    }
  }
  return { prefix: spec.prefix, pages, missing };
}

function reply(status: number, headers: Record<string, string>, body: Buffer, head: boolean): StaticReply {
  return { status, headers: { ...STATIC_HEADERS, ...headers, 'Content-Length': String(body.length) }, body: head ? undefined : body };
}

function errorBody(message: string): Buffer {
  return Buffer.from(JSON.stringify({ errors: [message] }));
}

/** The answer for a URL under one of `sites`, or undefined when none claims it (the API's then). */
export function serveStatic(sites: readonly StaticSite[], method: string, url: string): StaticReply | undefined {
  const q = url.indexOf('?');
  const rawPath = q === -1 ? url : url.slice(0, q);
  const site = sites.find((s) => rawPath === s.prefix || rawPath.startsWith(`${s.prefix}/`));
  if (site === undefined) return undefined;
  const head = method === 'HEAD';
  const json = { 'Content-Type': 'application/json; charset=utf-8' };
  if (method !== 'GET' && !head) return reply(405, { ...json, Allow: 'GET, HEAD' }, errorBody('method not allowed'), false);
  if (rawPath === site.prefix) return reply(301, { ...json, Location: `${site.prefix}/` }, errorBody('moved'), head);
  // Compared as given, never decoded or normalised: `%2e%2e` or `..` is simply not a listed name.
  const page = site.pages.get(rawPath.slice(site.prefix.length + 1));
  if (page === undefined) return reply(404, json, errorBody('not found'), head);
  return reply(200, { 'Content-Type': page.contentType }, page.body, head);
}
