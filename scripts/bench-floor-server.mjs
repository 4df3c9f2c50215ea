/**
 * The stand-in server of scripts/bench-floor.mjs: answers every request at once, doing only what
 * any HTTP API must (read the body, parse its JSON, write a small JSON reply), and prints the
 * banner startDevNode waits for. BENCH_FLOOR_MODE picks the shell:
 *   node     node:http alone
 *   express  express as it ships with one catch-all handler, behind the LIST framer (listAware)
 *            on a net.Server, the same deadlines: the issues' "express no-op floor"
 *   express-tessera  the same, its server made as Tessera's listener makes it
 *            (src/http/express-server.ts: requests and responses born with express's prototypes,
 *            so express's per-request setPrototypeOf changes nothing): Tessera's shell exactly
 */
import http from 'node:http';
import net from 'node:net';
import express from 'express';
import { expressHttpServer } from '../dist/http/express-server.js';
import { DEFAULT_TIMEOUTS, listAware, markResponded } from '../dist/http/list-method.js';

const REPLY = JSON.stringify({ request_id: '00000000-0000-0000-0000-000000000000', data: { created_time: new Date().toISOString(), deletion_time: '', destroyed: false, version: 1 } });

function handle(req, res) {
  res.once('finish', () => markResponded(req.socket));
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(REPLY));
    res.end(REPLY);
  });
}

const mode = process.env.BENCH_FLOOR_MODE ?? 'node';
let listener;
if (mode === 'node') {
  listener = http.createServer(handle);
  listener.keepAliveTimeout = DEFAULT_TIMEOUTS.idleMs;
} else if (mode === 'express' || mode === 'express-tessera') {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(handle);
  const httpServer = mode === 'express' ? http.createServer(app) : expressHttpServer(app);
  httpServer.headersTimeout = DEFAULT_TIMEOUTS.headersMs;
  httpServer.requestTimeout = DEFAULT_TIMEOUTS.headersMs + DEFAULT_TIMEOUTS.bodyMs;
  httpServer.keepAliveTimeout = DEFAULT_TIMEOUTS.idleMs;
  listener = net.createServer((s) => {
    s.setNoDelay(true);
    httpServer.emit('connection', listAware(s, DEFAULT_TIMEOUTS));
  });
} else if (mode === 'express-plain') {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(handle);
  listener = http.createServer(app);
  listener.keepAliveTimeout = DEFAULT_TIMEOUTS.idleMs;
} else {
  throw new Error(`unknown BENCH_FLOOR_MODE ${mode}`);
}
listener.listen(0, '127.0.0.1', () => {
  process.stdout.write(`Api Address: http://127.0.0.1:${listener.address().port}\nRoot Token: none\n`);
});
process.on('SIGTERM', () => process.exit(0));
