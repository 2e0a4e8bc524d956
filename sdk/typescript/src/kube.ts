// The SDK's few calls to the Kubernetes API: get, create, merge-patch, delete and one watch of one
// object, over Node's http/https with the kubeconfig's cluster and credentials as
// @kubernetes/client-node applies them (certificates, tokens, token files, exec plugins,
// refreshed per request). Claims and sandboxes are custom resources: their JSON is read as it is.

import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { createInterface } from "node:readline";

import type { KubeConfig } from "@kubernetes/client-node";

import { apiError, ConfigError, KuboxError, NotFoundError, SandboxConnectionError } from "./errors.js";

/** A Kubernetes object as the API server returns it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** A resource the SDK uses: where it is and how RBAC names it. */
export interface Resource {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

export const sandboxes: Resource = { group: "agents.x-k8s.io", version: "v1beta1", plural: "sandboxes", kind: "Sandbox" };
export const claims: Resource = { group: "extensions.agents.x-k8s.io", version: "v1beta1", plural: "sandboxclaims", kind: "SandboxClaim" };
export const snapshots: Resource = { group: "extensions.agents.x-k8s.io", version: "v1beta1", plural: "sandboxsnapshots", kind: "SandboxSnapshot" };

function path(res: Resource, ns: string, name = ""): string {
  const base = `/apis/${res.group}/${res.version}/namespaces/${encodeURIComponent(ns)}/${res.plural}`;
  return name ? `${base}/${encodeURIComponent(name)}` : base;
}

function rbac(res: Resource, verb: string, ns: string): string {
  return `${verb} on ${res.plural} (${res.group}) in namespace ${ns}`;
}

/** A watch ends after this long, with jitter, and is reopened from the last version seen. */
const watchSeconds = 240;

/** check sees each version of a watched object; true ends the watch, an error ends the wait. */
export type Check = (obj: KubeObject, deleted: boolean) => boolean;

/** Kube sends the SDK's requests to the API server of a kubeconfig. */
export class Kube {
  #agent: HttpsAgent | undefined;

  constructor(readonly config: KubeConfig) {}

  /**
   * keepAlive is the agent of a request to the API server. The kubeconfig makes a new agent for
   * every request, so each would pay a TCP and a TLS handshake (a claim makes three requests);
   * one keep-alive agent with the same TLS settings serves them all. A proxy's agent is kept.
   */
  #keepAlive(agent: unknown): unknown {
    if (!(agent instanceof HttpsAgent)) return agent;
    this.#agent ??= new HttpsAgent({ ...agent.options, keepAlive: true });
    return this.#agent;
  }

  /** close closes the connections kept open to the API server. */
  close(): void {
    this.#agent?.destroy();
    this.#agent = undefined;
  }

  /** host is the API server's URL. */
  get host(): string {
    const cluster = this.config.getCurrentCluster();
    if (!cluster) throw new ConfigError("the kubeconfig has no current cluster: set its current-context, or pass a context");
    return cluster.server.replace(/\/+$/, "");
  }

  async #open(method: string, p: string, body: unknown, contentType: string, signal?: AbortSignal): Promise<IncomingMessage> {
    const url = new URL(this.host + p);
    const opts: RequestOptions & { headers: Record<string, string> } = { method, headers: { Accept: "application/json" } };
    await this.config.applyToHTTPSOptions(opts);
    opts.agent = this.#keepAlive(opts.agent) as RequestOptions["agent"];
    const data = body === undefined ? undefined : JSON.stringify(body);
    if (data !== undefined) {
      opts.headers["Content-Type"] = contentType;
      // Node sends a DELETE's body without framing unless told its length.
      opts.headers["Content-Length"] = String(Buffer.byteLength(data));
    }
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((ok, fail) => {
      const req = send(url, { ...opts, signal }, ok);
      req.on("error", fail);
      req.end(data);
    });
  }

  /** request sends one request and returns the object answered; errors name object and the RBAC needed. */
  async request(method: string, res: Resource, ns: string, name: string, what: { doing: string; verb: string; object: string },
    body?: unknown, contentType = "application/json"): Promise<KubeObject> {
    let resp: IncomingMessage;
    try {
      resp = await this.#open(method, path(res, ns, method === "POST" ? "" : name), body, contentType);
    } catch (e) {
      throw new SandboxConnectionError(`${what.doing} ${what.object}: cannot reach the API server ${this.host}: ${String(e)}`, { cause: e });
    }
    const text = await readAll(resp);
    const status = resp.statusCode ?? 0;
    if (status >= 400) throw kubeError(status, text, what.doing, what.object, rbac(res, what.verb, ns));
    return JSON.parse(text) as KubeObject;
  }

  /** getPath reads any path of the API (a Service, EndpointSlices) as JSON. */
  async getPath<T>(p: string, object: string): Promise<T> {
    let resp: IncomingMessage;
    try {
      resp = await this.#open("GET", p, undefined, "");
    } catch (e) {
      throw new SandboxConnectionError(`reading ${object}: cannot reach the API server ${this.host}: ${String(e)}`, { cause: e });
    }
    const text = await readAll(resp);
    const status = resp.statusCode ?? 0;
    if (status >= 400) throw kubeError(status, text, "reading", object, "get/list on it");
    return JSON.parse(text) as T;
  }

  async get(res: Resource, ns: string, name: string): Promise<KubeObject> {
    return this.request("GET", res, ns, name, { doing: "reading", verb: "get", object: `${res.kind} ${ns}/${name}` });
  }

  async create(res: Resource, ns: string, body: KubeObject): Promise<KubeObject> {
    const object = `a ${res.kind} in ${ns}`;
    return this.request("POST", res, ns, "", { doing: "creating", verb: "create", object }, body);
  }

  async mergePatch(res: Resource, ns: string, name: string, patch: unknown): Promise<KubeObject> {
    return this.request("PATCH", res, ns, name, { doing: "patching", verb: "patch", object: `${res.kind} ${ns}/${name}` },
      patch, "application/merge-patch+json");
  }

  /** delete deletes an object with background propagation; false when it was gone already. */
  async delete(res: Resource, ns: string, name: string): Promise<boolean> {
    try {
      await this.request("DELETE", res, ns, name, { doing: "deleting", verb: "delete", object: `${res.kind} ${ns}/${name}` },
        { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background" });
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
    return true;
  }

  /**
   * watchUntil calls check with obj and then with every later version of it, followed with one
   * watch from obj's resourceVersion, until check returns true (that version is returned) or
   * throws. A watch the server ends is reopened from the last version seen; one whose version
   * expired (410) goes on from a fresh read. Nothing is polled.
   */
  async watchUntil(res: Resource, obj: KubeObject, check: Check, signal?: AbortSignal): Promise<KubeObject> {
    if (check(obj, false)) return obj;
    const ns = obj.metadata.namespace ?? "";
    const name = obj.metadata.name ?? "";
    let rv = obj.metadata.resourceVersion ?? "";
    for (;;) {
      const outcome = await this.#follow(res, ns, name, rv, check, signal);
      if (typeof outcome !== "string") return outcome;
      if (outcome) {
        rv = outcome;
        continue;
      }
      let fresh: KubeObject;
      try {
        fresh = await this.get(res, ns, name);
      } catch (e) {
        if (e instanceof NotFoundError) check(obj, true);
        throw e;
      }
      if (check(fresh, false)) return fresh;
      rv = fresh.metadata.resourceVersion ?? "";
    }
  }

  /** follow is one watch from rv: the accepted object, or the last version seen ("" when rv expired). */
  async #follow(res: Resource, ns: string, name: string, rv: string, check: Check, signal?: AbortSignal): Promise<KubeObject | string> {
    const params = new URLSearchParams({
      watch: "true",
      fieldSelector: `metadata.name=${name}`,
      resourceVersion: rv,
      allowWatchBookmarks: "true",
      timeoutSeconds: String(watchSeconds + Math.floor(Math.random() * 60)),
    });
    const object = `${res.kind} ${ns}/${name}`;
    let resp: IncomingMessage;
    try {
      resp = await this.#open("GET", `${path(res, ns)}?${params.toString()}`, undefined, "", signal);
    } catch (e) {
      if (signal?.aborted) throw e;
      throw new SandboxConnectionError(`watching ${object}: cannot reach the API server ${this.host}: ${String(e)}`, { cause: e });
    }
    if ((resp.statusCode ?? 0) >= 400) {
      throw kubeError(resp.statusCode ?? 0, await readAll(resp), "watching", object, rbac(res, "watch", ns));
    }
    try {
      for await (const line of createInterface({ input: resp, crlfDelay: Infinity })) {
        if (!line.trim()) continue;
        const ev = JSON.parse(line) as { type?: string; object?: KubeObject & { code?: number; reason?: string } };
        const o = ev.object;
        if (!o) continue;
        if (ev.type === "ERROR") {
          if (o.code === 410 || o.reason === "Expired" || o.reason === "Gone") return "";
          throw kubeError(o.code ?? 500, JSON.stringify(o), "watching", object, rbac(res, "watch", ns));
        }
        rv = o.metadata?.resourceVersion ?? rv;
        if ((ev.type === "ADDED" || ev.type === "MODIFIED" || ev.type === "DELETED") && check(o, ev.type === "DELETED")) {
          return o;
        }
      }
    } catch (e) {
      if (e instanceof KuboxError || signal?.aborted) throw e;
      // the connection broke: reopen from rv
    } finally {
      resp.destroy();
    }
    return rv;
  }
}

async function readAll(resp: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of resp) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** kubeError is the SDK's error for an API server's error answer, with what to do. */
export function kubeError(status: number, body: string, doing: string, object: string, rbacRule: string): KuboxError {
  let message = body.trim();
  let reason = "";
  try {
    const st = JSON.parse(body) as { message?: string; reason?: string };
    message = st.message ?? message;
    reason = st.reason ?? "";
  } catch {
    // not a Status: the body as it is
  }
  let text = `${doing} ${object}: ${message}`;
  if (status === 403) text += `; the identity needs RBAC ${rbacRule}`;
  if (status === 401) text += "; refresh the kubeconfig's credentials";
  return apiError({ status, message: text, code: reason, hint: "" });
}
