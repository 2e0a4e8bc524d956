// Node's HTTP client for the SDK (the Dialer of @kubox/sdk): HTTP/1.1 through
// @connectrpc/connect-node, as the Go SDK, so the Connect protocol streams both ways through any
// proxy or port-forward, with keep-alive connections shared by every sandbox.

import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";

import { createNodeHttpClient } from "@connectrpc/connect-node";
import type { UniversalClientFn } from "@connectrpc/connect/protocol";

/** Keep-alive agents shared by every Endpoint, so calls to one router reuse its connections. */
const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 64 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 64 }) };

/** nodeDialer is Node's HTTP/1.1 client for the agent at base. */
export function nodeDialer(base: string): UniversalClientFn {
  const agent = base.startsWith("https:") ? agents.https : agents.http;
  return createNodeHttpClient({ httpVersion: "1.1", nodeOptions: { agent } });
}
