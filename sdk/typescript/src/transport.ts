// How the SDK reaches a sandbox's agent: one HTTP client per sandbox, which carries the bearer
// token on every request, turns kubox-router's own JSON errors into errors connect-es keeps, and
// serves both the agent's Connect services and its plain /files/ contents. The HTTP client itself
// is the runtime's (a Dialer): Node's http/https in @kubox/sdk (transport-node.ts), fetch in
// @kubox/sdk/web (transport-fetch.ts); this module imports no node:* module, so both share it.

import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createAsyncIterable, type UniversalClientFn, type UniversalClientRequest, type UniversalClientResponse } from "@connectrpc/connect/protocol";
import { createTransport } from "@connectrpc/connect/protocol-connect";

import { callError, errorFromBody, RouterHTTPError } from "./errors.js";
import { FilesystemService } from "./gen/kubox/agent/v1/filesystem_pb.js";
import { ProcessService } from "./gen/kubox/agent/v1/process_pb.js";

/** The header and scheme of the bearer token, as api/contract's BearerTransport sends it. */
const authorizationHeader = "Authorization";
const bearerScheme = "Bearer";

/** The code interpreter's port in every sandbox (api/contract E2BCodeInterpreterPort). */
export const codeInterpreterPort = 49999;
/** The router's header naming a sandbox's port (api/contract SandboxPortHeader). */
const sandboxPortHeader = "X-Sandbox-Port";

/** The largest message the SDK reads or writes: the agent's limit on a message is far below it. */
const maxMessageBytes = 0xffffffff;

/** The most of an error body that is read to build the error's message. */
const maxErrorBody = 64 << 10;

/** sandboxRouterURL is the base URL, under the router, of the agent of sandbox ns/name. */
export function sandboxRouterURL(router: string, namespace: string, name: string): string {
  return `${trimSlash(router)}/sandboxes/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

/** claimRouterURL is the base URL, under the router, of the agent of claim ns/name's sandbox. */
export function claimRouterURL(router: string, namespace: string, claim: string): string {
  return `${trimSlash(router)}/claims/${encodeURIComponent(namespace)}/${encodeURIComponent(claim)}`;
}

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

/** contentPath is the path of a file's contents under the agent's /files/, each segment escaped. */
export function contentPath(path: string): string {
  const segs = path.replace(/^\/+/, "").split("/").map(encodeURIComponent);
  return "/files/" + segs.join("/");
}

/**
 * Dialer makes the plain HTTP client the SDK sends a sandbox's requests with, for the agent at
 * base: the runtime's own (Node's http, or fetch), without the token or error mapping.
 */
export type Dialer = (base: string) => UniversalClientFn;

/** Endpoint is a sandbox's agent at a base URL with a bearer token, and its clients. */
export class Endpoint {
  readonly base: string;
  readonly process: Client<typeof ProcessService>;
  readonly files: Client<typeof FilesystemService>;
  readonly #http: UniversalClientFn;

  /**
   * token is the bearer token, or a function that returns the current one (a kubeconfig's,
   * refreshed); dial makes the HTTP client; ready, when given, says the SDK saw the sandbox Ready
   * (see bearerClient).
   */
  constructor(base: string, token: string | (() => Promise<string>), dial: Dialer, ready?: () => boolean) {
    this.base = trimSlash(base);
    this.#http = bearerClient(token, dial(this.base), ready);
    const transport = connectTransport(this.base, this.#http);
    this.process = createClient(ProcessService, transport);
    this.files = createClient(FilesystemService, transport);
  }

  /**
   * content sends a plain HTTP request for a file's contents and returns the response of a
   * success; an error status becomes the SDK's error about object.
   */
  /** raw sends a plain HTTP request to the base URL itself and returns the response as it is. */
  async raw(req: Omit<UniversalClientRequest, "url" | "body"> & { body?: string }, object: string): Promise<UniversalClientResponse> {
    const body = req.body === undefined ? undefined : createAsyncIterable([new TextEncoder().encode(req.body)]);
    try {
      return await this.#http({ ...req, url: this.base, body });
    } catch (e) {
      throw callError(e, object);
    }
  }

  /**
   * code sends a request to the sandbox's code interpreter (kubox-agent's port 49999, E2B's
   * code-interpreter wire) and returns the response of a success. Through the router (a base URL
   * with a route path) the port is named with X-Sandbox-Port and the router adds the agent token;
   * at an agent's own address (no path) the request goes to that host's port 49999 with this
   * endpoint's token.
   */
  async code(req: { method: string; path: string; body?: string; signal?: AbortSignal }, object: string): Promise<UniversalClientResponse> {
    const header = new Headers();
    if (req.body !== undefined) header.set("Content-Type", "application/json");
    const u = new URL(this.base);
    let base = this.base;
    if (u.pathname === "/" || u.pathname === "") {
      u.port = String(codeInterpreterPort);
      base = trimSlash(u.toString());
    } else {
      header.set(sandboxPortHeader, String(codeInterpreterPort));
    }
    const body = req.body === undefined ? undefined : createAsyncIterable([new TextEncoder().encode(req.body)]);
    let res: UniversalClientResponse;
    try {
      res = await this.#http({ url: base + req.path, method: req.method, header, body, signal: req.signal });
    } catch (e) {
      throw callError(e, object);
    }
    if (res.status >= 400) {
      throw errorFromBody(res.status, await readText(res.body, maxErrorBody), object);
    }
    return res;
  }

  async content(req: Omit<UniversalClientRequest, "url"> & { path: string; query?: string }, object: string): Promise<UniversalClientResponse> {
    const url = this.base + contentPath(req.path) + (req.query ? "?" + req.query : "");
    const res = await this.#http({ url, method: req.method, header: req.header, body: req.body, signal: req.signal });
    if (res.status >= 400) {
      throw errorFromBody(res.status, await readText(res.body, maxErrorBody), object);
    }
    return res;
  }
}

/**
 * notReadyGraceMs is how long a 503 of the router is sent again for a sandbox the SDK saw Ready:
 * the router's cache of the Sandbox can lag the SDK's own watch by a few milliseconds, right
 * after resume (as the Go SDK's retryNotReady).
 */
const notReadyGraceMs = 3000;

/**
 * bearerClient is the runtime's HTTP client (http) with the token on every request and router
 * errors kept. With ready, a router's 503 is retried while ready() says the sandbox was seen Ready,
 * for requests whose body can be sent again (Connect calls, requests without a body).
 */
function bearerClient(token: string | (() => Promise<string>), http: UniversalClientFn, ready?: () => boolean): UniversalClientFn {
  return async (req) => {
    const header = new Headers(req.header);
    header.set(authorizationHeader, `${bearerScheme} ${typeof token === "string" ? token : await token()}`);
    const replayable = ready !== undefined && (req.body === undefined || isConnectCall(req) || fixedBodies.has(req.body));
    const body = replayable && req.body ? await readBytes(req.body) : undefined;
    const send = () => http({ ...req, header, body: body ? createAsyncIterable([body]) : req.body });
    let res = await send();
    for (let delay = 20, end = Date.now() + notReadyGraceMs; replayable && res.status === 503 && ready?.() && Date.now() < end;) {
      const routerBody = await readBytes(res.body, maxErrorBody);
      if (!routerError(routerBody)) {
        res = { ...res, body: createAsyncIterable([routerBody]) };
        break;
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(2 * delay, 250);
      res = await send();
    }
    return res.status >= 400 && isConnectCall(req) ? routerErrors(res) : res;
  };
}

/** Bodies of bytes already in memory (fixedBody), which a retry can send again. */
const fixedBodies = new WeakSet<AsyncIterable<Uint8Array>>();

/** fixedBody is data as a request body that a retry may send again. */
export function fixedBody(data: Uint8Array): AsyncIterable<Uint8Array> {
  const body = createAsyncIterable([data]);
  fixedBodies.add(body);
  return body;
}

/** isConnectCall tells a Connect call (a POST with a Connect or gRPC content type) from a /files/ request. */
function isConnectCall(req: UniversalClientRequest): boolean {
  return (req.header.get("Content-Type") ?? "").startsWith("application/proto") ||
    (req.header.get("Content-Type") ?? "").startsWith("application/connect");
}

/** routerError is the message of kubox-router's own JSON error ({"error": "...", "code": 404}), or undefined. */
function routerError(body: Uint8Array): string | undefined {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body)) as { error?: unknown; code?: unknown };
    if (typeof parsed.error === "string" && parsed.error && typeof parsed.code === "number") return parsed.error;
  } catch {
    // not JSON: the agent's, or a proxy's
  }
  return undefined;
}

/**
 * routerErrors turns kubox-router's JSON error into a ConnectError whose cause keeps the status
 * and message; the agent's own Connect errors pass through unchanged (their body is read once
 * and given back).
 */
async function routerErrors(res: UniversalClientResponse): Promise<UniversalClientResponse> {
  const body = await readBytes(res.body, maxErrorBody);
  const msg = routerError(body);
  if (msg !== undefined) throw new ConnectError(msg, Code.Unknown, undefined, undefined, new RouterHTTPError(res.status, msg));
  return { ...res, body: createAsyncIterable([body]) };
}

function connectTransport(baseUrl: string, httpClient: UniversalClientFn): Transport {
  return createTransport({
    baseUrl,
    httpClient,
    useBinaryFormat: true,
    interceptors: [],
    acceptCompression: [],
    sendCompression: null,
    compressMinBytes: maxMessageBytes,
    readMaxBytes: maxMessageBytes,
    writeMaxBytes: maxMessageBytes,
  });
}

/** readBytes reads up to limit bytes of body, and drains the rest. */
export async function readBytes(body: AsyncIterable<Uint8Array>, limit = Infinity): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < limit) {
      chunks.push(chunk);
      size += chunk.length;
    }
  }
  const out = new Uint8Array(Math.min(size, limit));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, out.length - at);
    out.set(part, at);
    at += part.length;
  }
  return out;
}

async function readText(body: AsyncIterable<Uint8Array>, limit: number): Promise<string> {
  return new TextDecoder().decode(await readBytes(body, limit));
}


/** streamChunks iterates a web ReadableStream (not every runtime makes them async iterable). */
export async function* streamChunks<T>(stream: ReadableStream<T>): AsyncIterable<T> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) return;
      yield r.value;
    }
  } finally {
    reader.releaseLock();
  }
}
