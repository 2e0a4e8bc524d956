// The Sandbox of @kubox/sdk: the shared one (sandbox.ts) on Node's HTTP/1.1 client and file
// system, so run/start stream over kept-alive connections and files.download/upload work.

import { nodeFiles } from "./files-node.js";
import { Sandbox as BaseSandbox, type Platform } from "./sandbox.js";
import { nodeDialer } from "./transport-node.js";

/** {@inheritDoc BaseSandbox} */
export class Sandbox extends BaseSandbox {
  /** @internal */
  static override readonly platform: Platform = { dial: nodeDialer, local: nodeFiles };
}
