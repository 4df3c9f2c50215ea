/**
 * expressHttpServer: requests and responses are born with the app's prototypes (so express's
 * per-request setPrototypeOf changes nothing), and express works on them as on its own server.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { expressHttpServer } from './express-server.js';

describe('expressHttpServer', () => {
  it('constructs requests and responses with the app\'s prototypes; express\'s helpers and routing work on them', async () => {
    const app = express();
    const born: { req: unknown; res: unknown }[] = [];
    app.get('/hello/:name', (req, res) => {
      res.status(201).json({ name: req.params.name, host: req.get('host'), app: req.app === app, query: req.query.x });
    });
    app.use((_req, res) => res.status(404).send('nope'));
    const server = expressHttpServer(app);
    // Before express's handler: what node:http constructed.
    server.prependListener('request', (req, res) => born.push({ req: Object.getPrototypeOf(req), res: Object.getPrototypeOf(res) }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await fetch(`${base}/hello/ada?x=1`);
      expect(r.status).toBe(201);
      expect(await r.json()).toEqual({ name: 'ada', host: new URL(base).host, app: true, query: '1' });
      const missing = await fetch(`${base}/other`);
      expect(missing.status).toBe(404);
      expect(await missing.text()).toBe('nope');
      expect(born).toHaveLength(2);
      for (const b of born) {
        expect(b.req).toBe(app.request);
        expect(b.res).toBe(app.response);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
