export * from './errors.js';
export * from './duration.js';
export * from './version.js';
