// @kubox/sdk: the TypeScript SDK of kubox. It runs processes and moves files in kubox sandboxes
// through kubox-router (or an agent's own URL) with a bearer token; see docs/sdk-typescript.md.
// It is @kubox/sdk/web (web.ts) plus the Kubernetes side (Client) and the Node runtime's
// Sandbox, which adds local file streams.

export * from "./web.js";
export {
  buildClaim,
  type ClaimOptions,
  type ClaimSource,
  type ClaimToken,
  Client,
  type ClientOptions,
  createdBy,
  createdByLabel,
  forkOf,
  type IdlePolicy,
  type SnapshotOptions,
} from "./client.js";
export { ClaimFailedError } from "./errors.js";
export type { KubeObject } from "./kube.js";
// The Node Sandbox; this explicit export takes the place of web.js's.
export { Sandbox } from "./sandbox-node.js";
