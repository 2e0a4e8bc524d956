// The fetch HTTP client for the SDK (the Dialer of @kubox/sdk/web), for browsers, edge runtimes
// and Deno. A request body is sent whole: a browser streams a request body only over HTTP/2 and
// with a half-duplex fetch, and kubox-router speaks HTTP/1.1, so a streamed body would fail (or
// wait for an end that never comes). No SDK call streams a request body of unknown length: stdin
// goes in SendInput calls, files.write of a stream is read into memory first. Responses stream.

import { type UniversalClientFn, universalClientResponseFromFetch } from "@connectrpc/connect/protocol";

import { SandboxConnectionError } from "./errors.js";
import { readBytes } from "./transport.js";

/**
 * fetchDialer is the runtime's fetch, for an agent at any base. fetch is looked up on each request,
 * so a test or an app can wrap globalThis.fetch after the Sandbox is made.
 */
export function fetchDialer(): UniversalClientFn {
  return async (req) => {
    const body = req.body === undefined ? undefined : await readBytes(req.body);
    let res: Response;
    try {
      res = await globalThis.fetch(req.url, { method: req.method, headers: req.header, body, signal: req.signal });
    } catch (e) {
      if (req.signal?.aborted) throw e;
      // A browser says no more than "Failed to fetch", whether the router is down or refused
      // this page's origin (CORS): both mean the request never got an answer.
      throw new SandboxConnectionError(`cannot reach ${req.url}: ${String(e)} (in a browser, kubox-router must allow this page's ` +
        "origin: --cors-allowed-origins)", { cause: e });
    }
    return { ...universalClientResponseFromFetch(res), header: decodedHeaders(res.headers) };
  };
}

/**
 * decodedHeaders are a response's headers as its body reads: a browser asks for gzip on every
 * request (Accept-Encoding, which a page cannot change), the agent's Connect server then
 * compresses a unary answer, and fetch gives the body already decoded. Content-Encoding and
 * Content-Length describe the bytes on the wire; left in, connect-es would decode again and
 * check the length against them. Across origins a page sees Content-Length but not
 * Content-Encoding, so Content-Length goes always: fetch's body has the length it has.
 */
function decodedHeaders(headers: Headers): Headers {
  const h = new Headers(headers);
  h.delete("Content-Encoding");
  h.delete("Content-Length");
  return h;
}
