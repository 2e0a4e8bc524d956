// @kubox/sdk/web: the claim-token mode of the TypeScript SDK for browsers, edge runtimes and
// Deno, on fetch. A holder of a claim token (`kubox token <claim>`) runs processes and moves files
// in that claim's sandbox through kubox-router; nothing here reaches the Kubernetes API or a
// file system, and no module this one imports is a node:* one (test/integration/tsweb bundles it
// for the browser, which fails on any). See docs/sdk-typescript.md, "Browsers and edge runtimes".

export {
  APIError,
  type APIErrorInit,
  CommandError,
  ConfigError,
  ConflictError,
  ForbiddenError,
  KuboxError,
  MemoryNotKeptError,
  NotFoundError,
  SandboxConnectionError,
  SandboxNotReadyError,
  SandboxTimeoutError,
  SnapshotFailedError,
  UnauthorizedError,
} from "./errors.js";
export { type CodeContext, type CodeLanguage, type CodeResult, defaultCodeOutputBytes, defaultCodeResultBytes, type Execution, type ExecutionError, type RunCodeOptions } from "./code.js";
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
export { type AttachOptions, KeepAlive, type ProcessInfo, minKeepAliveIntervalMs, type RouterOptions, Sandbox } from "./sandbox.js";
