#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// The shebang is src/cli/runtime.ts's RUNTIME_ENV and RUNTIME_NODE_ARGS (test/e2e/runtime-flags.test.ts).
import '../dist/cli/main.js';
