/**
 * pino JSON logs. Request logs carry a request id and a route label only; tokens, key shares,
 * request bodies and secret values are never passed to the logger, and the redact list below is
 * a second fence for header objects that might be logged by accident.
 *
 *   const log = createLogger({ level: 'info' });
 */
import pino, { type Logger } from 'pino';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';

export function createLogger(opts: { level: LogLevel; destination?: pino.DestinationStream }): Logger {
  const options: pino.LoggerOptions = {
    level: opts.level,
    base: { service: 'tessera', pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['*.headers["x-vault-token"]', '*.headers.authorization', 'token', 'key', 'keys', 'root_token', '*.token', '*.client_token'],
      censor: '[redacted]',
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}
