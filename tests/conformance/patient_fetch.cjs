// Preloaded (`node --require`) into the conformance CLI by tests/conformance/provision.py.
//
// On a loaded machine the CLI's HTTP client failed with "fetch failed": it reused a
// keep-alive connection that the server was closing at that moment (a POST is never retried),
// or gave up connecting after undici's 10 s. This gives every fetch of the process a new
// connection and a minute to connect; nothing else changes.
"use strict";
const path = require("node:path");

const entry = process.argv[1];
const undici = require(require.resolve("undici", { paths: [path.dirname(entry || ".")] }));
undici.setGlobalDispatcher(
  new undici.Agent({ pipelining: 0, connect: { timeout: 60_000 }, headersTimeout: 600_000 }),
);
