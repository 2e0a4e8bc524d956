// @kubox/sdk: the TypeScript SDK of kubox. It runs processes and moves files in kubox sandboxes
// through kubox-router (or an agent's own URL) with a bearer token; see docs/sdk-typescript.md.

export {
  buildClaim,
  type ClaimOptions,
  type ClaimSource,
  type ClaimToken,
  Client,
  type ClientOptions,
  createdBy,
  createdByLabel,
  type IdlePolicy,
} from "./client.js";
export {
  APIError,
  type APIErrorInit,
  ClaimFailedError,
  CommandError,
  ConfigError,
  ConflictError,
  ForbiddenError,
  KuboxError,
  NotFoundError,
  SandboxConnectionError,
  SandboxNotReadyError,
  SandboxTimeoutError,
  UnauthorizedError,
} from "./errors.js";
export type { KubeObject } from "./kube.js";
export { type CallOptions, type FileEvent, type FileInfo, Files, FileWatch, type WriteData } from "./files.js";
export {
  type Command,
  type CommandOptions,
  type CommandResult,
  type DroppedEvent,
  type ExitEvent,
  type OutputEvent,
  Process,
  type ProcessEvent,
  type RunOptions,
  type StartOptions,
  type StdinSource,
  type Stream,
  type TTYSize,
} from "./process.js";
export { type AttachOptions, KeepAlive, type ProcessInfo, minKeepAliveIntervalMs, type RouterOptions } from "./sandbox.js";
export { Sandbox } from "./sandbox-node.js";
