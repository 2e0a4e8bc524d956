// The Kubernetes side: claims (from a pool or a template) waited for with one watch, sandboxes
// opened by name, suspend and resume, claim tokens, and where kubox-router is. The semantics are
// the Go and Python SDKs' (sdk/go/kubox/claim.go, wait.go; sdk/python/src/kubox/aio.py).

import { existsSync, readFileSync } from "node:fs";
import { isIPv4, isIPv6 } from "node:net";

import { KubeConfig } from "@kubernetes/client-node";
import { load as loadYAML } from "js-yaml";

import { ClaimFailedError, ConfigError, errorFromBody, MemoryNotKeptError, SandboxNotReadyError, SandboxTimeoutError, SnapshotFailedError,
  UnauthorizedError } from "./errors.js";
import { claims, Kube, type KubeObject, sandboxes, snapshots } from "./kube.js";
import { RouterForward } from "./portforward.js";
import { Sandbox } from "./sandbox-node.js";
import { nodeDialer } from "./transport-node.js";
import { Endpoint, readBytes, sandboxRouterURL, trimSlash } from "./transport.js";

/** The agents.x-k8s.io/created-by label and this SDK's value of it on the claims it creates. */
export const createdByLabel = "agents.x-k8s.io/created-by";
export const createdBy = "typescript-client";
/** When the client first asked for the claim (agent-sandbox's annotation). */
export const firstRequestedAtAnnotation = "agents.x-k8s.io/client-first-requested-at";
/** metadata.generateName of claims created without a name. */
export const claimGenerateName = "kubox-";
/** The Secret of a sandbox's agent token is the sandbox's name and this (Go: sandboxv1beta1.AgentSecretName). */
const agentSecretSuffix = "-kubox-agent";
/** agentSecretName is the name of the Secret holding the agent token of the sandbox name. */
export function agentSecretName(name: string): string {
  return `${name}${agentSecretSuffix}`;
}
/** The key of the agent token in that Secret (Go: sandboxv1beta1.AgentTokenSecretKey). */
export const agentTokenKey = "token";
/** The environment variable of kubox-router's URL (Go: contract.RouterURLEnv). */
export const routerURLEnv = "KUBOX_ROUTER_URL";
/** The kubeconfig cluster extension that names kubox-router's URL (`make dev` writes it). */
export const routerExtension = "kubox.dev/router";
export const defaultRouterNamespace = "kubox-system";
export const defaultRouterService = "sandbox-router-svc";
export const defaultRouterPort = 8080;
export const defaultReadyTimeoutMs = 180_000;

/** Options of a Client. */
export interface ClientOptions {
  /** A loaded kubeconfig; default: loaded from kubeconfigPath, $KUBECONFIG, the Pod's service account or ~/.kube/config. */
  kubeConfig?: KubeConfig;
  /** A kubeconfig file to load instead of the default ones. */
  kubeconfigPath?: string;
  /** The kubeconfig context; default its current context. */
  context?: string;
  /** Namespace of claims and sandboxes; default the context's, else "default". */
  namespace?: string;
  /**
   * kubox-router's URL; default $KUBOX_ROUTER_URL, the kubeconfig cluster's kubox.dev/router
   * extension, and inside a Pod the router's Service.
   */
  routerURL?: string;
  routerNamespace?: string;
  routerService?: string;
  /**
   * How the router is reached: "router" (routerURL), "port-forward" (through the API server to a
   * ready Pod of the router's Service, on 127.0.0.1; close the Client to stop it), or "auto" (the
   * default): the router when its URL is known or in a Pod, else a port-forward. "direct" dials
   * the sandbox's Pod IP on the agent's port with the agent token from its Secret (in the
   * cluster only; RBAC get on secrets; no router).
   */
  connection?: "auto" | "router" | "port-forward" | "direct";
  /** The bearer token for the router; default the kubeconfig's (token, token file, exec plugin). */
  token?: string;
  /** How long claim, connect, open, suspend and resume wait; default 180000. */
  readyTimeoutMs?: number;
}

/** What a claim is made from: a warm pool or a template. */
export type ClaimSource = { pool: string; template?: undefined } | { template: string; pool?: undefined };

/** The idle policy of a claim, in the API's spelling. */
export interface IdlePolicy {
  /** A Go duration, "10m"; 30s to 8760h. */
  suspendAfter?: string;
  runningProcesses?: "KeepAwake" | "Ignore";
  wake?: "OnRequest" | "Manual";
}

/** Options of Client.claim and createClaim. */
export interface ClaimOptions {
  namespace?: string;
  /** Names the claim; default generated ("kubox-" and five characters). */
  name?: string;
  /** The claim and its sandbox expire this long from now (spec.lifecycle, policy Delete). */
  ttlMs?: number;
  /** spec.env: the template's envVarsInjectionPolicy must allow them. */
  env?: Record<string, string>;
  /** Labels of the claim. */
  labels?: Record<string, string>;
  /** spec.additionalPodMetadata. */
  podLabels?: Record<string, string>;
  podAnnotations?: Record<string, string>;
  /** spec.idlePolicy.suspendAfter in milliseconds (30s to 8760h). */
  suspendAfterMs?: number;
  /** spec.idlePolicy as a whole; suspendAfterMs sets its suspendAfter. */
  idlePolicy?: IdlePolicy;
  /**
   * spec.egress.allowDomains, narrowing the template's egress: the sandbox may reach only these
   * names ("pypi.org", or "*.pythonhosted.org" for the names below it) among those its template
   * allows. A name the template does not allow, or any egress option on a template without
   * egress, fails the claim with reason EgressRejected.
   */
  allowDomains?: string[];
  /** spec.egress.denyDomains: names refused besides the template's, in the form of allowDomains. */
  denyDomains?: string[];
  /** spec.egress.denyCIDRs: address ranges ("192.0.2.0/24", "2001:db8::/32") refused besides the template's. */
  denyCIDRs?: string[];
  /**
   * spec.snapshotRef: start the sandbox from this SandboxSnapshot (its name, or the object
   * Sandbox.snapshot returns), its processes, memory and files as they were. It must be of a
   * sandbox of the same template; a pool serves such a claim warm only when its template starts
   * from that snapshot, otherwise the sandbox starts cold.
   */
  snapshot?: string | KubeObject;
  /** Called with every version of the claim seen while waiting (from the one watch). */
  onProgress?: (claim: KubeObject) => void;
}

/** A claim token and when it expires. */
export interface ClaimToken {
  token: string;
  expiresAt: Date | undefined;
}

// The Ready reasons a claim does not leave by itself (Go: extv1beta1.ClaimTerminalReasons), with
// what to do about each.
const terminal: Record<string, string> = {
  WarmPoolNotFound: "",
  TemplateNotFound: "",
  InvalidMetadata: "change podLabels/podAnnotations to ones the template and the controller allow",
  EnvVarsInjectionRejected: "drop env, or allow the variables in the template's envVarsInjectionPolicy",
  VolumeClaimTemplatesError: "change the claim's volumeClaimTemplates to ones the template's volumeClaimTemplatesPolicy allows",
  ClaimExpired: "claim a new sandbox (a longer ttlMs keeps it longer)",
  SandboxExpired: "claim a new sandbox",
  PodFailed: "read the Pod's logs (`kubectl logs`) and claim a new sandbox",
  PodSucceeded: "the sandbox's main command exited; claim a new sandbox",
  EgressRejected: "a claim may only narrow its template's egress: pass allowDomains among or below the template's " +
    "spec.egress.allowDomains, or drop allowDomains/denyDomains/denyCIDRs when the template has no spec.egress",
};

/** claimTerminalReasons are the Ready reasons a claim does not leave by itself. */
export const claimTerminalReasons: readonly string[] = Object.keys(terminal);

/** sandboxTerminalReasons are the reasons of a Sandbox's Ready=False that it does not leave by itself (Go: sandboxv1beta1.SandboxTerminalReasons). */
export const sandboxTerminalReasons: readonly string[] = ["SandboxExpired", "PodFailed", "PodSucceeded"];

/**
 * Client claims, connects to and opens kubox sandboxes on a Kubernetes cluster; their processes
 * and files go through kubox-router.
 */
export class Client {
  readonly namespace: string;
  readonly routerURL: string;
  readonly readyTimeoutMs: number;
  /** @internal */
  readonly kube: Kube;
  /** "router", "port-forward" or "direct": what connection "auto" resolved to. */
  readonly connection: "router" | "port-forward" | "direct";
  readonly #token: string | undefined;
  readonly #routerNamespace: string;
  readonly #routerService: string;
  #forward: Promise<RouterForward> | undefined;

  constructor(opts: ClientOptions = {}) {
    const kc = opts.kubeConfig ?? loadKubeConfig(opts.kubeconfigPath);
    if (opts.context) kc.setCurrentContext(opts.context);
    this.kube = new Kube(kc);
    const ctx = kc.getContextObject(kc.getCurrentContext());
    this.namespace = opts.namespace || ctx?.namespace || podNamespace() || "default";
    this.readyTimeoutMs = opts.readyTimeoutMs ?? defaultReadyTimeoutMs;
    this.#token = opts.token;
    this.#routerNamespace = opts.routerNamespace ?? defaultRouterNamespace;
    this.#routerService = opts.routerService ?? defaultRouterService;
    this.routerURL = opts.connection === "port-forward" || opts.connection === "direct" ? "" : trimSlash(opts.routerURL || process.env[routerURLEnv] ||
      kubeconfigRouter(opts.kubeconfigPath, kc) || (inPod() ? `http://${this.#routerService}.${this.#routerNamespace}.svc:${defaultRouterPort}` : ""));
    if (opts.connection === "router" && !this.routerURL) {
      throw new ConfigError(`connection is "router" but no router URL is known: set routerURL or $KUBOX_ROUTER_URL, e.g. http://127.0.0.1:18080`);
    }
    this.connection = opts.connection === "direct" ? "direct" : this.routerURL ? "router" : "port-forward";
  }

  /** close stops the client's port-forward, if it started one, and its connections to the API server. Sandboxes stay. */
  async close(): Promise<void> {
    this.kube.close();
    const fwd = this.#forward;
    this.#forward = undefined;
    if (fwd) (await fwd.catch(() => undefined))?.close();
  }

  /** @internal bearer is the router's token: the one given, else the kubeconfig's. */
  async bearer(): Promise<string> {
    if (this.#token) return this.#token;
    const o: { headers: Record<string, string> } = { headers: {} };
    await this.kube.config.applyToHTTPSOptions(o);
    const auth = o.headers.Authorization ?? o.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ")) {
      throw new UnauthorizedError({
        status: 401,
        message: "kubox-router authenticates bearer tokens, and this kubeconfig has none (it authenticates with a client " +
          "certificate, or not at all): pass token (`kubectl create token <service-account>`, or a claim token from `kubox token`)",
        hint: "",
      });
    }
    return auth.slice("Bearer ".length);
  }

  /** @internal router is the router's URL: the one given or found, or a port-forward's (started once). */
  async router(): Promise<string> {
    if (this.routerURL) return this.routerURL;
    this.#forward ??= RouterForward.start(this.kube, this.#routerNamespace, this.#routerService, defaultRouterPort);
    try {
      return (await this.#forward).url;
    } catch (e) {
      this.#forward = undefined;
      throw e;
    }
  }

  /** createClaim creates the SandboxClaim claim would and returns it at once, without waiting. */
  async createClaim(source: ClaimSource, opts: ClaimOptions = {}): Promise<KubeObject> {
    const ns = opts.namespace ?? this.namespace;
    return this.kube.create(claims, ns, buildClaim(source, { ...opts, namespace: ns }, new Date()));
  }

  /**
   * claim claims a sandbox from a SandboxWarmPool ({pool}) or a new one from a SandboxTemplate
   * ({template}) and waits until it is Ready, with one watch and no polling. It throws
   * ClaimFailedError when the claim fails for good and SandboxTimeoutError after readyTimeoutMs,
   * deleting the claim first. Closing the sandbox deletes the claim.
   */
  async claim(source: ClaimSource, opts: ClaimOptions = {}): Promise<Sandbox> {
    const claim = await this.createClaim(source, opts);
    try {
      const sb = await this.#waitClaim(claim, opts.onProgress, source.pool);
      sb.ownsClaim = true;
      return sb;
    } catch (e) {
      const m = claim.metadata;
      await this.kube.delete(claims, m.namespace ?? "", m.name ?? "").catch(() => undefined);
      throw e;
    }
  }

  /** connect returns the sandbox of an existing claim once it is Ready (a suspended one at once). */
  async connect(claim: string, opts: { namespace?: string; onProgress?: (claim: KubeObject) => void } = {}): Promise<Sandbox> {
    const obj = await this.kube.get(claims, opts.namespace ?? this.namespace, claim);
    return this.#waitClaim(obj, opts.onProgress);
  }

  /** open returns the Sandbox name (no claim) once it is Ready; a suspended one at once. */
  async open(name: string, opts: { namespace?: string } = {}): Promise<Sandbox> {
    let obj = await this.kube.get(sandboxes, opts.namespace ?? this.namespace, name);
    if (!isSuspended(obj)) obj = await this.waitSandbox(obj, sandboxReady);
    return this.#sandbox(obj, "");
  }

  /**
   * mintClaimToken asks kubox-router for a claim token: a bearer token that reaches only the
   * claim's sandbox, while the claim exists, until it expires. Give it to a program with no
   * Kubernetes credentials (Sandbox.claimToken). RBAC: create on sandboxclaims/connect.
   */
  async mintClaimToken(claim: string, opts: { namespace?: string; ttlSeconds?: number } = {}): Promise<ClaimToken> {
    const ns = opts.namespace ?? this.namespace;
    const about = `claim ${ns}/${claim}`;
    const url = `${await this.router()}/v1/claims/${encodeURIComponent(ns)}/${encodeURIComponent(claim)}/token`;
    const ep = new Endpoint(url, () => this.bearer(), nodeDialer);
    const res = await ep.raw({ method: "POST", header: new Headers({ "Content-Type": "application/json" }),
      body: JSON.stringify({ ttlSeconds: opts.ttlSeconds ?? 3600 }) }, about);
    const text = new TextDecoder().decode(await readBytes(res.body));
    if (res.status !== 200) throw errorFromBody(res.status, text, about);
    const doc = JSON.parse(text) as { token?: string; expiresAt?: string };
    if (!doc.token) throw new UnauthorizedError({ status: 401, message: "the router's answer is not a token", object: about });
    return { token: doc.token, expiresAt: doc.expiresAt ? new Date(doc.expiresAt) : undefined };
  }

  async #waitClaim(claim: KubeObject, onProgress: ((c: KubeObject) => void) | undefined, pool?: string): Promise<Sandbox> {
    let last = claim;
    const what = `SandboxClaim ${nameOf(claim)}`;
    const ready = await this.#withinTimeout(what, () => last, pool, (signal) =>
      this.kube.watchUntil(claims, claim, (obj, deleted) => {
        last = obj;
        if (deleted) {
          throw new ClaimFailedError(`${what} was deleted while waiting for it to become Ready`, { namespace: obj.metadata.namespace ?? "",
            claim: obj.metadata.name ?? "", reason: "Deleted", conditionMessage: "" });
        }
        onProgress?.(obj);
        return claimState(obj);
      }, signal));
    const ns = ready.metadata.namespace ?? "";
    const obj = await this.kube.get(sandboxes, ns, claimSandboxName(ready));
    return this.#sandbox(obj, ready.metadata.name ?? "");
  }

  /**
   * @internal setOperatingMode sets the Sandbox's spec.operatingMode (RBAC patch on sandboxes)
   * and waits until it is in that mode (Sandbox.suspend, resume); link.obj follows it.
   */
  async setOperatingMode(link: { obj: KubeObject }, mode: "Suspended" | "Running", spec: Record<string, unknown> = {}): Promise<void> {
    const { namespace = "", name = "" } = link.obj.metadata;
    link.obj = await this.kube.mergePatch(sandboxes, namespace, name, { spec: { ...spec, operatingMode: mode } });
    link.obj = await this.waitSandbox(link.obj, mode === "Suspended" ? sandboxSuspended : sandboxReady);
  }

  /**
   * @internal suspend suspends the Sandbox (Sandbox.suspend), with keepMemory setting
   * spec.suspendPolicy.keepMemory too and throwing MemoryNotKeptError when the memory was not kept.
   */
  async suspend(link: { obj: KubeObject }, keepMemory: boolean, what: string): Promise<void> {
    await this.setOperatingMode(link, "Suspended", keepMemory ? { suspendPolicy: { keepMemory: true } } : {});
    const why = keepMemory ? memoryNotKept(link.obj) : "";
    if (why) throw new MemoryNotKeptError(`${what} is suspended without its memory: ${why}`);
  }

  /** @internal snapshot creates a SandboxSnapshot of Sandbox ns/name and waits until it is Ready (Sandbox.snapshot). */
  async snapshot(ns: string, name: string, opts: SnapshotOptions = {}): Promise<KubeObject> {
    const snap = await this.kube.create(snapshots, ns, snapshotOf(ns, name, opts));
    let last = snap;
    const what = `SandboxSnapshot ${nameOf(snap)}`;
    return this.#withinTimeout(what, () => last, undefined, (signal) =>
      this.kube.watchUntil(snapshots, snap, (obj, deleted) => {
        last = obj;
        if (deleted) throw new SnapshotFailedError(`${what} was deleted while waiting for it`);
        return snapshotTaken(obj);
      }, signal));
  }

  /**
   * forkFrom starts n Sandboxes from the Ready SandboxSnapshot snapshot (as Sandbox.snapshot
   * returns it), each with the spec of the Sandbox it was taken of, and returns them once all are
   * Ready (RBAC get, create and watch on sandboxes). Delete them with Sandbox.delete.
   */
  async forkFrom(snapshot: KubeObject, n: number): Promise<Sandbox[]> {
    if (!(n >= 1)) throw new ConfigError(`fork: n is ${n}; want at least 1`);
    const ns = snapshot.metadata.namespace ?? "";
    const source = (snapshot.spec?.sandboxRef as { name?: string } | undefined)?.name ?? "";
    const src = await this.kube.get(sandboxes, ns, source);
    return Promise.all(Array.from({ length: n }, async () => {
      const obj = await this.kube.create(sandboxes, ns, forkOf(src, snapshot.metadata.name ?? ""));
      return this.#sandbox(await this.waitSandbox(obj, sandboxReady), "");
    }));
  }

  /** @internal deleteSandbox deletes Sandbox ns/name (Sandbox.delete of a fork). */
  async deleteSandbox(ns: string, name: string): Promise<void> {
    await this.kube.delete(sandboxes, ns, name);
  }

  /** @internal deleteClaim deletes claim ns/name (Sandbox.close of a claim Client.claim made). */
  async deleteClaim(ns: string, name: string): Promise<void> {
    await this.kube.delete(claims, ns, name);
  }

  /** @internal waitSandbox waits, with one watch, until state says the Sandbox is there. */
  async waitSandbox(sb: KubeObject, state: (o: KubeObject) => boolean): Promise<KubeObject> {
    let last = sb;
    const what = `Sandbox ${nameOf(sb)}`;
    return this.#withinTimeout(what, () => last, undefined, (signal) =>
      this.kube.watchUntil(sandboxes, sb, (obj, deleted) => {
        last = obj;
        if (deleted) {
          throw new SandboxNotReadyError({ status: 404, object: what,
            message: "the Sandbox was deleted while waiting for it (its claim was deleted or it expired)" });
        }
        return state(obj);
      }, signal));
  }

  async #withinTimeout(what: string, last: () => KubeObject, pool: string | undefined,
    wait: (signal: AbortSignal) => Promise<KubeObject>): Promise<KubeObject> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.readyTimeoutMs);
    try {
      return await wait(abort.signal);
    } catch (e) {
      if (!abort.signal.aborted) throw e;
      const hint = pool ? ` (is pool "${pool}" filling? \`kubectl get sandboxwarmpool ${pool}\`)` : "";
      throw new SandboxTimeoutError(`${what} is not Ready after ${this.readyTimeoutMs}ms; last ${conditionText(last())}${hint}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async #sandbox(obj: KubeObject, claim: string): Promise<Sandbox> {
    const ns = obj.metadata.namespace ?? "";
    const name = obj.metadata.name ?? "";
    const link = { client: this, obj };
    if (this.connection === "direct") return new Sandbox(directEndpoint(this.kube, link), { namespace: ns, name, claim }, link);
    const ep = new Endpoint(sandboxRouterURL(await this.router(), ns, name), () => this.bearer(), nodeDialer, () => seenReady(link.obj));
    return new Sandbox(ep, { namespace: ns, name, claim }, link);
  }
}

/**
 * directEndpoint finds a sandbox's agent at its current Pod IP, on the port kubox-controller
 * recorded (status.agent.port), with the agent token from Secret <sandbox>-kubox-agent, read once
 * per Sandbox UID. The SDK does not guess a port and send the agent token there.
 */
function directEndpoint(kube: Kube, link: { obj: KubeObject }): () => Promise<Endpoint> {
  let cached: { key: string; ep: Endpoint } | undefined;
  let token: { uid: string; value: string } | undefined;
  return async () => {
    const sb = link.obj;
    const ns = sb.metadata.namespace ?? "";
    const name = sb.metadata.name ?? "";
    const what = `sandbox ${ns}/${name}`;
    if (sb.spec?.agent === undefined) {
      throw new ConfigError(`${what} has no spec.agent, so kubox-agent does not run in it: claim it from a SandboxTemplate whose spec sets agent: {}`);
    }
    const ip = ((sb.status?.podIPs as string[] | undefined) ?? [])[0];
    if (!ip) throw new SandboxNotReadyError({ status: 503, object: what, message: "it has no Pod IP (suspended or starting)" });
    const port = (sb.status?.agent as { port?: number } | undefined)?.port;
    if (!port) {
      throw new SandboxNotReadyError({ status: 503, object: what, message: "its status does not record the agent's port yet (status.agent)", hint: "wait for Ready" });
    }
    const uid = sb.metadata.uid ?? "";
    if (token?.uid !== uid) {
      const secret = agentSecretName(name);
      const doc = await kube.getPath<{ data?: Record<string, string> }>(`/api/v1/namespaces/${encodeURIComponent(ns)}/secrets/${encodeURIComponent(secret)}`,
        `Secret ${ns}/${secret} (the agent token of ${what}; direct connections need get on secrets)`);
      const value = Buffer.from(doc.data?.[agentTokenKey] ?? "", "base64").toString("utf8").trim();
      if (!value) {
        throw new ConfigError(`Secret ${ns}/${secret} has no "${agentTokenKey}" key: the controller has not written the sandbox's agent token; check its agent configuration`);
      }
      token = { uid, value };
    }
    const base = `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
    const key = `${base} ${uid}`;
    if (cached?.key !== key) cached = { key, ep: new Endpoint(base, token.value, nodeDialer) };
    return cached.ep;
  };
}

function loadKubeConfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

/** inPod says whether the program runs in a Kubernetes Pod, as client-go decides. */
function inPod(): boolean {
  return !!process.env.KUBERNETES_SERVICE_HOST && !!process.env.KUBERNETES_SERVICE_PORT && existsSync(`${serviceAccountDir}/token`);
}

function podNamespace(): string {
  try {
    return inPod() ? readFileSync(`${serviceAccountDir}/namespace`, "utf8").trim() : "";
  } catch {
    return "";
  }
}

/** kubeconfigRouter is the URL of the current cluster's kubox.dev/router extension, or "". */
function kubeconfigRouter(path: string | undefined, kc: KubeConfig): string {
  const files = path ? [path] : (process.env.KUBECONFIG ?? `${process.env.HOME ?? ""}/.kube/config`).split(":");
  const cluster = kc.getCurrentCluster()?.name;
  for (const f of files) {
    try {
      const doc = loadYAML(readFileSync(f, "utf8")) as { clusters?: { name?: string; cluster?: { extensions?: { name?: string; extension?: { url?: string } }[] } }[] };
      for (const c of doc.clusters ?? []) {
        if (c.name !== cluster) continue;
        const url = c.cluster?.extensions?.find((e) => e.name === routerExtension)?.extension?.url;
        if (url) return url;
      }
    } catch {
      // a file that is missing or not YAML has no extension
    }
  }
  return "";
}

/** buildClaim is the SandboxClaim claim creates for source and opts at now. */
export function buildClaim(source: ClaimSource, opts: ClaimOptions & { namespace: string }, now: Date): KubeObject {
  if (!source.pool === !source.template) {
    throw new ConfigError('a claim needs exactly one source: {pool: "name"} (a SandboxWarmPool) or {template: "name"} (a SandboxTemplate)');
  }
  if (opts.ttlMs !== undefined && !(opts.ttlMs > 0)) throw new ConfigError(`ttlMs must be positive, not ${opts.ttlMs}`);
  const spec: Record<string, unknown> = source.pool ? { warmPoolRef: { name: source.pool } } : { sandboxTemplateRef: { name: source.template } };
  if (opts.ttlMs) {
    const at = new Date(Math.floor((now.getTime() + opts.ttlMs) / 1000) * 1000);
    spec.lifecycle = { shutdownTime: at.toISOString().replace(".000Z", "Z"), shutdownPolicy: "Delete" };
  }
  if (opts.env && Object.keys(opts.env).length) {
    spec.env = Object.keys(opts.env).sort().map((name) => ({ name, value: opts.env?.[name] ?? "" }));
  }
  const policy = idlePolicySpec(opts.suspendAfterMs, opts.idlePolicy);
  if (policy) spec.idlePolicy = policy;
  const egress = egressSpec(opts);
  if (egress) spec.egress = egress;
  if (opts.snapshot) spec.snapshotRef = { name: snapshotName(opts.snapshot) };
  const meta: Record<string, Record<string, string>> = {};
  if (opts.podLabels && Object.keys(opts.podLabels).length) meta.labels = { ...opts.podLabels };
  if (opts.podAnnotations && Object.keys(opts.podAnnotations).length) meta.annotations = { ...opts.podAnnotations };
  if (Object.keys(meta).length) spec.additionalPodMetadata = meta;
  return {
    apiVersion: `${claims.group}/${claims.version}`,
    kind: claims.kind,
    metadata: {
      namespace: opts.namespace,
      ...(opts.name ? { name: opts.name } : { generateName: claimGenerateName }),
      labels: { ...opts.labels, [createdByLabel]: createdBy },
      annotations: { [firstRequestedAtAnnotation]: now.toISOString() },
    },
    spec,
  };
}

/** snapshotName is the name of a SandboxSnapshot given by name or as the object. */
export function snapshotName(snapshot: string | KubeObject): string {
  if (typeof snapshot === "string") return snapshot;
  const name = snapshot.metadata.name;
  if (!name) {
    throw new ConfigError("snapshot must be a SandboxSnapshot's name or the object Sandbox.snapshot() returns; this one has no metadata.name");
  }
  return name;
}

const suspendAfterMinMs = 30_000;
const suspendAfterMaxMs = 8760 * 3600_000;

/** idlePolicySpec is a claim's spec.idlePolicy, or undefined when neither argument is given. */
export function idlePolicySpec(suspendAfterMs: number | undefined, policy: IdlePolicy | undefined): IdlePolicy | undefined {
  if (suspendAfterMs === undefined && !policy) return undefined;
  const out: IdlePolicy = { ...policy };
  if (suspendAfterMs !== undefined) {
    if (!(suspendAfterMs >= suspendAfterMinMs && suspendAfterMs <= suspendAfterMaxMs)) {
      throw new ConfigError(`suspendAfterMs must be between 30000 (30s) and 8760 hours, not ${suspendAfterMs}`);
    }
    out.suspendAfter = `${suspendAfterMs / 1000}s`;
  }
  if (!out.suspendAfter) {
    throw new ConfigError('an idle policy needs suspendAfter: pass suspendAfterMs, or idlePolicy: {suspendAfter: "10m", ...}');
  }
  return out;
}

/** spec.egress of a claim: the lists of ClaimOptions that are not empty. */
export interface EgressRestriction {
  allowDomains?: string[];
  denyDomains?: string[];
  denyCIDRs?: string[];
}

// The form of an egress domain and the bounds of spec.egress, as the API validates them
// (EgressRestriction in api/v1beta1/egress_types.go): checked here so that a typo fails at once,
// naming the option, rather than as the API server's 422.
const domainPattern = /^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const domainMaxLen = 253;
const cidrMaxLen = 43;
const domainList = { most: 64, ok: isDomain,
  fix: "is not a domain: give a lowercase name such as pypi.org, or *.pythonhosted.org for the names below it" };
const cidrList = { most: 32, ok: isCIDR, fix: "is not a CIDR: give an address range such as 203.0.113.0/24 or 2001:db8::/32" };

/**
 * egressSpec is a claim's spec.egress from opts, or undefined when its lists are all empty. It
 * throws ConfigError for a value the API would refuse; repeats are dropped (the API's lists are
 * sets, which refuse them).
 */
export function egressSpec(opts: EgressRestriction): EgressRestriction | undefined {
  const out: EgressRestriction = {};
  for (const [field, list] of [["allowDomains", domainList], ["denyDomains", domainList], ["denyCIDRs", cidrList]] as const) {
    const items = egressList(field, opts[field], list);
    if (items.length) out[field] = items;
  }
  return Object.keys(out).length ? out : undefined;
}

function egressList(field: string, values: unknown, list: { most: number; ok: (v: string) => boolean; fix: string }): string[] {
  if (values === undefined || values === null) return [];
  if (!Array.isArray(values)) {
    throw new ConfigError(`${field} must be an array of strings, not ${JSON.stringify(values)}: write ${field}: [${JSON.stringify(values)}]`);
  }
  const items: string[] = [];
  for (const v of values as unknown[]) {
    if (typeof v !== "string" || !list.ok(v)) throw new ConfigError(`${field}: ${JSON.stringify(v)} ${list.fix}`);
    if (!items.includes(v)) items.push(v);
  }
  if (items.length > list.most) throw new ConfigError(`${field} has ${items.length} entries; a claim may give at most ${list.most}`);
  return items;
}

function isDomain(d: string): boolean {
  return d.length <= domainMaxLen && domainPattern.test(d);
}

/**
 * isCIDR says whether the API's CEL isCIDR (Go's netip.ParsePrefix) takes c: an address and a
 * decimal prefix length, host bits allowed, no IPv6 zone, no IPv4-mapped IPv6 address.
 */
function isCIDR(c: string): boolean {
  const m = /^([^/%]+)\/(0|[1-9][0-9]{0,2})$/.exec(c);
  if (!m || c.length > cidrMaxLen) return false;
  const [, addr = "", bits = ""] = m;
  if (isIPv4(addr)) return Number(bits) <= 32;
  // The URL parser writes an IPv6 address in its canonical form, where a mapped one is ::ffff:x:y.
  return isIPv6(addr) && Number(bits) <= 128 && !/^\[::ffff:[0-9a-f]{1,4}:[0-9a-f]{1,4}\]$/.test(new URL(`http://[${addr}]/`).hostname);
}

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

function nameOf(o: KubeObject): string {
  return `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;
}

function condition(o: KubeObject, type: string): Condition | undefined {
  return ((o.status?.conditions ?? []) as Condition[]).find((c) => c.type === type);
}

/** currentCondition is the condition when it was computed for the object's current generation. */
function currentCondition(o: KubeObject, type: string): Condition | undefined {
  const c = condition(o, type);
  return c && c.observedGeneration === o.metadata.generation ? c : undefined;
}

function conditionText(o: KubeObject): string {
  const r = condition(o, "Ready");
  if (!r) return "status: no Ready condition yet (is kubox-controller running?)";
  return `Ready=${r.status ?? ""} ${r.reason ?? ""}: ${r.message ?? ""}`;
}

function claimSandboxName(claim: KubeObject): string {
  return (claim.status?.sandbox as { name?: string } | undefined)?.name ?? "";
}

/**
 * claimState says whether the claim can be used (Ready, or its sandbox suspended), and throws
 * ClaimFailedError when it failed for good. Only a status computed for its generation counts.
 */
export function claimState(claim: KubeObject): boolean {
  const gen = claim.metadata.generation;
  const r = condition(claim, "Ready");
  if (!r || claim.status?.observedGeneration !== gen || r.observedGeneration !== gen) return false;
  const hasSandbox = claimSandboxName(claim) !== "";
  if (hasSandbox && (r.status === "True" || r.reason === "SandboxSuspended")) return true;
  const reason = r.reason ?? "";
  if (r.status !== "False" || !(reason in terminal)) return false;
  const ns = claim.metadata.namespace ?? "";
  let fix = terminal[reason] ?? "";
  if (reason === "WarmPoolNotFound") {
    const pool = (claim.spec?.warmPoolRef as { name?: string } | undefined)?.name ?? "";
    fix = `create SandboxWarmPool "${pool}" in namespace ${ns}, or claim from a pool that exists (\`kubectl get sandboxwarmpools -n ${ns}\`)`;
  } else if (reason === "TemplateNotFound") {
    fix = `create the SandboxTemplate in namespace ${ns}, or name one that exists (\`kubectl get sandboxtemplates -n ${ns}\`)`;
  }
  throw new ClaimFailedError(`SandboxClaim ${nameOf(claim)} failed: ${reason}: ${r.message ?? ""}; ${fix}`,
    { namespace: ns, claim: claim.metadata.name ?? "", reason, conditionMessage: r.message ?? "" });
}

/** sandboxReady says whether the Sandbox is Ready with a Pod IP; it throws when it never will be (Go: sandboxv1beta1.SandboxReadiness). */
export function sandboxReady(sb: KubeObject): boolean {
  const r = currentCondition(sb, "Ready");
  if (!r) return false;
  if (r.status === "True") return ((sb.status?.podIPs as unknown[] | undefined) ?? []).length > 0;
  if (r.status === "False" && sandboxTerminalReasons.includes(r.reason ?? "")) {
    throw new SandboxNotReadyError({ status: 503, object: `Sandbox ${nameOf(sb)}`,
      message: `it will not become Ready: ${r.reason}: ${r.message ?? ""}`, hint: "claim a new sandbox" });
  }
  return false;
}

/**
 * sandboxSuspended says whether the Sandbox's suspension is complete: Suspended=True, its Pod
 * gone; it throws when the sandbox has expired, since an expired sandbox takes no operatingMode
 * (Go: sandboxv1beta1.SandboxSuspension).
 */
export function sandboxSuspended(sb: KubeObject): boolean {
  const r = currentCondition(sb, "Ready");
  if (r?.status === "False" && r.reason === "SandboxExpired") {
    throw new SandboxNotReadyError({ status: 503, object: `Sandbox ${nameOf(sb)}`,
      message: `it will not be suspended: SandboxExpired: ${r.message ?? ""}`, hint: "claim a new sandbox" });
  }
  return currentCondition(sb, "Suspended")?.status === "True";
}

/** seenReady says whether the Sandbox was Ready, and not being suspended, when the SDK last saw it. */
function seenReady(sb: KubeObject): boolean {
  try {
    return sandboxReady(sb) && !isSuspended(sb);
  } catch {
    return false;
  }
}

/** isSuspended says whether the Sandbox's spec asks for it to be suspended. */
export function isSuspended(sb: KubeObject): boolean {
  return sb.spec?.operatingMode === "Suspended";
}

/** forkOfLabel is on a fork: the source Sandbox's name (Go: sandboxv1beta1.ForkOfLabel). */
export const forkOfLabel = "kubox.dev/fork-of";

/** generatedPrefix cuts name so that name + suffix and five random characters fit in 63 characters. */
export function generatedPrefix(name: string, suffix: string): string {
  return name.slice(0, 63 - 5 - suffix.length) + suffix;
}

/** SnapshotOptions says what Sandbox.snapshot() takes. */
export interface SnapshotOptions {
  /**
   * filesystemOnly saves the writes to the sandbox's root filesystems and emptyDir volumes only,
   * not its processes and memory (spec.type Filesystem): sandboxes started from the snapshot run
   * their processes afresh on those files.
   */
  filesystemOnly?: boolean;
}

/** snapshotOf is a SandboxSnapshot of Sandbox ns/name, named after it by the API server. */
export function snapshotOf(ns: string, name: string, opts: SnapshotOptions = {}): KubeObject {
  const spec: Record<string, unknown> = { sandboxRef: { name } };
  if (opts.filesystemOnly) spec.type = "Filesystem";
  return { apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxSnapshot",
    metadata: { namespace: ns, generateName: generatedPrefix(name, "-snap-") }, spec };
}

/** snapshotTaken says whether the SandboxSnapshot is Ready; it throws SnapshotFailedError when it failed for good. */
export function snapshotTaken(snap: KubeObject): boolean {
  const r = condition(snap, "Ready");
  if (r?.status === "True") return snap.status?.snapshot !== undefined;
  if (r?.reason === "CheckpointFailed") {
    throw new SnapshotFailedError(`SandboxSnapshot ${nameOf(snap)}: the snapshot could not be taken: ${r.message ?? ""}`);
  }
  return false;
}

/**
 * forkOf is a new Sandbox that starts from the SandboxSnapshot snapshot taken of src: src's spec,
 * running, with spec.snapshotRef, a generated name and the fork-of label (Go: sandboxv1beta1.ForkOf).
 */
export function forkOf(src: KubeObject, snapshot: string): KubeObject {
  const name = src.metadata.name ?? "";
  const spec = structuredClone(src.spec ?? {});
  spec.operatingMode = "Running";
  spec.snapshotRef = { name: snapshot };
  return { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox",
    metadata: { namespace: src.metadata.namespace, generateName: generatedPrefix(name, "-fork-"), labels: { [forkOfLabel]: name } }, spec };
}

/** memoryNotKept says why a Sandbox suspended with keepMemory holds no snapshot of its memory, or "" (Go: sandboxv1beta1.MemoryNotKept). */
export function memoryNotKept(sb: KubeObject): string {
  const c = condition(sb, "MemoryKept");
  if (!c) return "the controller did not say why (is it older than spec.suspendPolicy?)";
  if (c.status === "True" && sb.status?.memory) return "";
  return c.message ?? "";
}
