/**
 * A jest environment for hunting leaked handles: after each test file's environment is torn down
 * it waits 2 s and appends the file and whatever still keeps the worker's event loop alive
 * (sockets, servers, timers, child processes; the worker's own IPC and stdio pipes excluded) to
 * $HANDLES_OUT (default handles.txt). `npm run test:handles`, then look for non-empty lists.
 */
const { appendFileSync } = require('node:fs');
const { TestEnvironment } = require('jest-environment-node');

module.exports = class HandlesEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
  }

  async teardown() {
    await super.teardown();
    await new Promise((resolve) => setTimeout(resolve, 2000).unref());
    const held = process.getActiveResourcesInfo().filter((t) => t !== 'TTYWrap' && t !== 'PipeWrap');
    appendFileSync(process.env.HANDLES_OUT ?? 'handles.txt', `${this.testPath} ${JSON.stringify(held)}\n`);
  }
};
