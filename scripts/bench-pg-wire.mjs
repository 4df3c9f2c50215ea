/**
 * A minimal PostgreSQL client for the bench (scripts/bench-pg.mjs): protocol 3.0 over TCP, trust
 * authentication only, simple-query protocol, one query in flight. It exists so the probe that
 * times "commit acknowledged -> visible on the standby" polls on one long-lived connection with a
 * round trip of a fraction of a millisecond, like Tessera's probe on a keep-alive HTTP connection
 * (spawning psql per poll costs milliseconds; the `pg` package is not a dependency).
 *
 *   const c = await pgConnect({ port, user: 'bench', database: 'postgres' });
 *   const { rows } = await c.query('SELECT 1');   // rows: arrays of text (null for NULL)
 *   await c.close();
 * A server error rejects with an Error carrying `code` (the SQLSTATE) once the server is ready again.
 */
import net from 'node:net';

const cstring = (s) => Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]);

function message(type, body) {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** Fields of an ErrorResponse: { C: sqlstate, M: message, ... }. */
function errorFields(body) {
  const fields = {};
  for (let i = 0; i < body.length && body[i] !== 0;) {
    const end = body.indexOf(0, i + 1);
    fields[String.fromCharCode(body[i])] = body.toString('utf8', i + 1, end);
    i = end + 1;
  }
  return fields;
}

export function pgConnect({ host = '127.0.0.1', port, user, database = 'postgres' }) {
  return new Promise((resolveConn, rejectConn) => {
    const sock = net.connect({ host, port });
    sock.setNoDelay(true);
    let buf = Buffer.alloc(0);
    let ready = false;
    let pending; // { resolve, reject, rows, command, error }
    let closed = false;
    const fail = (e) => {
      closed = true;
      if (!ready) rejectConn(e);
      if (pending) {
        const p = pending;
        pending = undefined;
        p.reject(e);
      }
    };
    sock.on('error', fail);
    sock.on('close', () => fail(new Error(`connection to 127.0.0.1:${port} closed`)));
    const onMessage = (type, body) => {
      if (type === 'R') {
        const code = body.readInt32BE(0);
        if (code !== 0) fail(new Error(`authentication method ${code} requested: the bench client speaks trust only`));
      } else if (type === 'E') {
        const f = errorFields(body);
        const e = Object.assign(new Error(`${f.S ?? 'ERROR'} ${f.C}: ${f.M}`), { code: f.C });
        if (!ready) fail(e);
        else if (pending) pending.error = e;
      } else if (type === 'Z') {
        if (!ready) {
          ready = true;
          resolveConn(conn);
        } else if (pending) {
          const p = pending;
          pending = undefined;
          if (p.error) p.reject(p.error);
          else p.resolve({ rows: p.rows, command: p.command });
        }
      } else if (type === 'D' && pending) {
        const n = body.readInt16BE(0);
        const row = [];
        for (let i = 0, off = 2; i < n; i++) {
          const len = body.readInt32BE(off);
          off += 4;
          row.push(len < 0 ? null : body.toString('utf8', off, off + len));
          if (len > 0) off += len;
        }
        pending.rows.push(row);
      } else if (type === 'C' && pending) {
        pending.command = body.toString('utf8', 0, body.length - 1);
      }
      // S (parameter status), K (backend key), T (row description), N (notice), I (empty): not needed
    };
    sock.on('data', (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 5) {
        const len = buf.readInt32BE(1);
        if (buf.length < len + 1) break;
        onMessage(String.fromCharCode(buf[0]), buf.subarray(5, len + 1));
        buf = buf.subarray(len + 1);
      }
    });
    const conn = {
      query(sql) {
        if (closed) return Promise.reject(new Error('connection closed'));
        if (pending) return Promise.reject(new Error('one query at a time'));
        return new Promise((resolve, reject) => {
          pending = { resolve, reject, rows: [], command: undefined, error: undefined };
          sock.write(message('Q', cstring(sql)));
        });
      },
      close() {
        if (closed) return Promise.resolve();
        closed = true;
        return new Promise((resolve) => {
          sock.once('close', resolve);
          sock.end(message('X', Buffer.alloc(0)));
        });
      },
    };
    sock.once('connect', () => {
      const params = Buffer.concat([cstring('user'), cstring(user), cstring('database'), cstring(database), Buffer.from([0])]);
      const head = Buffer.alloc(8);
      head.writeInt32BE(params.length + 8, 0);
      head.writeInt32BE(196608, 4); // protocol 3.0
      sock.write(Buffer.concat([head, params]));
    });
  });
}
