// Errors the SDK throws. Every one names the object it is about ("sandbox team-a/kubox-x7k2p",
// "file /work/a in sandbox team-a/kubox-x7k2p") and, where there is one, what to do about it, as
// the Go SDK's (sdk/go/kubox/errors.go) and the Python SDK's do. Catch KuboxError for all of them,
// or test with instanceof for one kind.

import { Code, ConnectError } from "@connectrpc/connect";

/** KuboxError is the base of every error the SDK throws on purpose. */
export class KuboxError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** ConfigError: the SDK was given options it cannot work with; the message says how to fix them. */
export class ConfigError extends KuboxError {}

/** SandboxConnectionError: the router or the sandbox's agent could not be reached (refused, reset, DNS). */
export class SandboxConnectionError extends KuboxError {}

/** suspend({keepMemory: true}) suspended the sandbox without its memory; the message says why. */
export class MemoryNotKeptError extends KuboxError {}

/** snapshot() or fork() could not snapshot the sandbox; the message is the controller's reason. */
export class SnapshotFailedError extends KuboxError {}

/**
 * SandboxTimeoutError: a wait did not end in time, the router answered 504 (its X-Sandbox-Timeout
 * passed), or the caller's AbortSignal ended the call.
 */
export class SandboxTimeoutError extends KuboxError {
  /** The HTTP status (504) when a server answered; undefined for a wait or an abort. */
  readonly status: number | undefined;
  constructor(message: string, status?: number, options?: ErrorOptions) {
    super(message, options);
    this.status = status;
  }
}

/**
 * ClaimFailedError: a SandboxClaim reached a state it will not leave by itself (its pool or
 * template does not exist, its env, metadata or egress was rejected, it expired, its Pod
 * ended). The claim is deleted by Client.claim before this is thrown.
 */
export class ClaimFailedError extends KuboxError {
  readonly namespace: string;
  readonly claim: string;
  /** The reason of the claim's Ready condition (WarmPoolNotFound, ClaimExpired, ...). */
  readonly reason: string;
  /** The message of the claim's Ready condition. */
  readonly conditionMessage: string;
  constructor(message: string, init: { namespace: string; claim: string; reason: string; conditionMessage: string }) {
    super(message);
    this.namespace = init.namespace;
    this.claim = init.claim;
    this.reason = init.reason;
    this.conditionMessage = init.conditionMessage;
  }
}

/** CommandError: a command run with `check: true` exited with a non-zero status. */
export class CommandError extends KuboxError {
  /** The result of the command, with its output. */
  readonly result: unknown;
  constructor(message: string, result: unknown) {
    super(message);
    this.result = result;
  }
}

/** What APIError takes. */
export interface APIErrorInit {
  /** The HTTP status; for the agent's Connect errors, the status that stands for the code. */
  status: number;
  /** What the server said. */
  message: string;
  /** What the request was about, e.g. "sandbox default/kubox-x7k2p". */
  object?: string;
  /** The agent's Connect code ("not_found", "failed_precondition", ...) or the Kubernetes reason; "" for router errors. */
  code?: string;
  /** What to do; default the SDK's advice for the status (about kubox-router's and the agent's answers). */
  hint?: string;
}

/**
 * APIError is an error answered by kubox-router or kubox-agent: an HTTP status with a message,
 * about an object. Its subclasses stand for the statuses a program handles: 401
 * UnauthorizedError, 403 ForbiddenError, 404 NotFoundError, 409 ConflictError, 503
 * SandboxNotReadyError.
 */
export class APIError extends KuboxError {
  readonly status: number;
  readonly serverMessage: string;
  readonly object: string;
  readonly code: string;
  /** What to do about it; "" when there is nothing particular. */
  readonly hint: string;
  constructor(init: APIErrorInit, options?: ErrorOptions) {
    super(apiErrorText(init), options);
    this.status = init.status;
    this.serverMessage = init.message;
    this.object = init.object ?? "";
    this.code = init.code ?? "";
    this.hint = init.hint ?? hints[init.status] ?? "";
  }
}

/** UnauthorizedError: the router or the agent did not accept the token (HTTP 401). */
export class UnauthorizedError extends APIError {}
/** ForbiddenError: the token was accepted but may not do this (HTTP 403). */
export class ForbiddenError extends APIError {}
/** NotFoundError: the claim, sandbox, process or file does not exist (HTTP 404). */
export class NotFoundError extends APIError {}
/** ConflictError: the object exists already, or changed meanwhile (HTTP 409). */
export class ConflictError extends APIError {}
/** SandboxNotReadyError: the sandbox cannot take requests now (suspended, starting; HTTP 503). */
export class SandboxNotReadyError extends APIError {}

// Hints for the statuses a caller can act on; the same advice as the Go and Python SDKs give.
const hints: Record<number, string> = {
  401:
    "the router accepts a Kubernetes bearer token (`kubectl create token`), a claim token " +
    "(`kubox token`, or the Go/Python SDK's MintClaimToken) or its shared token: pass it as the token",
  403:
    "the identity needs create on sandboxes/connect (agents.x-k8s.io) or sandboxclaims/connect " +
    "(extensions.agents.x-k8s.io) for this object; see docs/sdk-typescript.md#errors",
  502:
    "the router could not reach the sandbox's agent; check that the sandbox's Pod runs kubox-agent " +
    "(the template's spec.agent)",
  503: "the sandbox is not ready (suspended, starting, or its Pod has no IP); resume it or wait for Ready",
};

function apiErrorText(init: APIErrorInit): string {
  let text = init.message || `HTTP ${init.status}`;
  if (init.object) text = `${init.object}: ${text}`;
  text += ` (HTTP ${init.status})`;
  const hint = init.hint ?? hints[init.status];
  return hint ? `${text}; ${hint}` : text;
}

const classes: Record<number, typeof APIError> = {
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  503: SandboxNotReadyError,
};

/** apiError is the error for an error status: the APIError subclass of it, or SandboxTimeoutError for 504. */
export function apiError(init: APIErrorInit, options?: ErrorOptions): KuboxError {
  if (init.status === 504) {
    const what = init.message || "gateway timeout";
    return new SandboxTimeoutError(`${init.object ? init.object + ": " : ""}${what} (HTTP 504)`, 504, options);
  }
  const cls = classes[init.status] ?? APIError;
  return new cls(init, options);
}

// The HTTP status that stands for each Connect code, as sdk/go's codeStatus.
const codeStatus: Partial<Record<Code, number>> = {
  [Code.Canceled]: 499,
  [Code.InvalidArgument]: 400,
  [Code.OutOfRange]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.Aborted]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 412,
  [Code.Unimplemented]: 501,
  [Code.Unavailable]: 503,
  [Code.Unauthenticated]: 401,
};

/** statusOfCode is the HTTP status of a Connect code (500 for codes without one). */
export function statusOfCode(code: Code): number {
  return codeStatus[code] ?? 500;
}

// The Connect wire names of the codes ("not_found"), which the agent also uses in its plain HTTP errors.
function codeName(code: Code): string {
  return Code[code].replace(/[A-Z]/g, (c, i: number) => (i ? "_" : "") + c.toLowerCase());
}

/**
 * RouterHTTPError carries kubox-router's own JSON error ({"error": "...", "code": 404}) through
 * connect-es, which would otherwise map the status through gRPC's table (404 becomes
 * Unimplemented) and lose the router's message.
 */
export class RouterHTTPError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * callError turns an error of a Connect call or an HTTP request to the agent into one that names
 * object and says what to do. KuboxErrors pass through unchanged.
 */
export function callError(err: unknown, object: string): KuboxError {
  if (err instanceof KuboxError) return err;
  if (err instanceof ConnectError) {
    if (err.cause instanceof KuboxError) return err.cause;
    if (err.cause instanceof RouterHTTPError) {
      return apiError({ status: err.cause.status, message: err.cause.message, object }, { cause: err });
    }
    if (err.code === Code.Canceled) {
      return new SandboxTimeoutError(`${object}: the call was aborted: ${err.rawMessage}`, undefined, { cause: err });
    }
    if (isConnectionFailure(err.cause)) {
      // connect-node reports a reset mid-stream as Aborted and a refused dial as Unavailable:
      // both are the network's, not the agent's answer.
      return new SandboxConnectionError(`${object}: cannot reach the agent: ${err.rawMessage}`, { cause: err });
    }
    const status = statusOfCode(err.code);
    return apiError({ status, message: err.rawMessage, object, code: codeName(err.code) }, { cause: err });
  }
  if (isAbort(err)) {
    return new SandboxTimeoutError(`${object}: the call was aborted`, undefined, { cause: err });
  }
  if (isConnectionFailure(err) || isConnectionFailure((err as { cause?: unknown } | undefined)?.cause)) {
    return new SandboxConnectionError(`${object}: cannot reach the agent: ${String(err)}`, { cause: err });
  }
  return new KuboxError(`${object}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError");
}

const connectionCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EHOSTUNREACH", "ETIMEDOUT", "EPIPE", "EAI_AGAIN"]);

function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && connectionCodes.has(code);
}

/** errorFromBody reads an error response of the router ({"error"}) or the agent ({"code","message"}). */
export function errorFromBody(status: number, body: string, object: string): KuboxError {
  let message = body.trim();
  let code = "";
  try {
    const parsed = JSON.parse(body) as { error?: unknown; code?: unknown; message?: unknown };
    if (typeof parsed.error === "string" && parsed.error) {
      message = parsed.error;
    } else if (typeof parsed.message === "string" && parsed.message) {
      message = parsed.message;
      code = typeof parsed.code === "string" ? parsed.code : "";
    }
  } catch {
    // not JSON: the body as it is
  }
  return apiError({ status, message, object, code });
}
