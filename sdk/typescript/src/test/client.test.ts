// The Kubernetes side against stand-ins: an API server that keeps objects and serves watches as
// kube-apiserver does (the test plays kubox-controller by writing the claims' and sandboxes'
// status), and a router that forwards /sandboxes/<ns>/<name>/ to a real kubox-agent. What they
// check: one watch per wait and no polling, the claim the SDK creates, failures and timeouts that
// delete the claim, suspend/resume, close, claim tokens.

import assert from "node:assert/strict";
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";

import { KubeConfig } from "@kubernetes/client-node";

import { egressSpec, generatedPrefix, memoryNotKept, snapshotOf, snapshotTaken } from "../client.js";
import { buildClaim, ClaimFailedError, type ClaimOptions, Client, ConfigError, createdBy, createdByLabel, forkOf, type KubeObject, Sandbox,
  SandboxNotReadyError, SandboxTimeoutError, SnapshotFailedError } from "../index.js";
import { freePort, LocalAgent } from "./agent.js";

type Obj = KubeObject & { status?: Record<string, unknown> };

/** FakeAPI keeps objects by path and serves get, create, merge patch, delete and watches of them. */
class FakeAPI {
  readonly objects = new Map<string, Obj>();
  readonly log: string[] = [];
  readonly watches = new Set<{ key: string; res: ServerResponse }>();
  /** Called after each write with the object written, as a controller's informer would be. */
  onWrite: (key: string, obj: Obj, verb: string) => void = () => undefined;
  /** When set, the next watch request is answered with 410 Gone in the stream. */
  expireNextWatch = false;
  #rv = 100;
  #names = 0;
  server: Server = createServer((req, res) => void this.#serve(req, res));
  url = "";

  async listen(): Promise<void> {
    const port = await freePort();
    await new Promise<void>((ok) => this.server.listen(port, "127.0.0.1", ok));
    this.url = `http://127.0.0.1:${port}`;
  }

  /** put stores obj (a new resourceVersion) and sends it to the watches of its collection. */
  put(key: string, obj: Obj, type = "MODIFIED"): Obj {
    obj.metadata.resourceVersion = String(++this.#rv);
    this.objects.set(key, obj);
    for (const w of this.watches) {
      if (w.key === key) w.res.write(JSON.stringify({ type, object: obj }) + "\n");
    }
    return obj;
  }

  /** endWatches ends every open watch, as an API server does when timeoutSeconds pass. */
  endWatches(): void {
    for (const w of this.watches) w.res.end();
    this.watches.clear();
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const body = await new Promise<string>((ok) => {
      let b = "";
      req.on("data", (c: Buffer) => (b += c.toString()));
      req.on("end", () => ok(b));
    });
    const watch = url.searchParams.get("watch") === "true";
    this.log.push(`${req.method ?? ""} ${url.pathname}${watch ? " watch" : ""}`);
    if (req.headers.authorization !== "Bearer kube-token") return send(res, 401, { kind: "Status", message: "Unauthorized", reason: "Unauthorized" });
    if (watch) {
      const name = (url.searchParams.get("fieldSelector") ?? "").replace("metadata.name=", "");
      const key = `${url.pathname}/${name}`;
      res.writeHead(200, { "Content-Type": "application/json" });
      if (this.expireNextWatch) {
        this.expireNextWatch = false;
        res.end(JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } }) + "\n");
        return;
      }
      const entry = { key, res };
      this.watches.add(entry);
      req.on("close", () => this.watches.delete(entry));
      const cur = this.objects.get(key);
      if (cur && Number(cur.metadata.resourceVersion) > Number(url.searchParams.get("resourceVersion"))) {
        res.write(JSON.stringify({ type: "MODIFIED", object: cur }) + "\n");
      }
      return;
    }
    const key = url.pathname;
    switch (req.method) {
      case "POST": {
        const obj = JSON.parse(body) as Obj;
        obj.metadata.name ??= `${obj.metadata.generateName ?? ""}x${++this.#names}`;
        obj.metadata.generation = 1;
        obj.metadata.uid = `uid-${this.#names}`;
        const k = `${key}/${obj.metadata.name}`;
        this.put(k, obj, "ADDED");
        send(res, 201, obj);
        this.onWrite(k, obj, "create");
        return;
      }
      case "GET": {
        const obj = this.objects.get(key);
        return obj ? send(res, 200, obj) : send(res, 404, { kind: "Status", code: 404, reason: "NotFound", message: `${key} not found` });
      }
      case "PATCH": {
        const obj = this.objects.get(key);
        if (!obj) return send(res, 404, { kind: "Status", code: 404, reason: "NotFound", message: `${key} not found` });
        const patch = JSON.parse(body) as { spec: Record<string, unknown> };
        obj.spec = { ...obj.spec, ...patch.spec };
        obj.metadata.generation = (obj.metadata.generation ?? 0) + 1;
        send(res, 200, this.put(key, obj));
        this.onWrite(key, obj, "patch");
        return;
      }
      case "DELETE": {
        const obj = this.objects.get(key);
        if (!obj) return send(res, 404, { kind: "Status", code: 404, reason: "NotFound", message: `${key} not found` });
        assert.equal((JSON.parse(body) as { propagationPolicy?: string }).propagationPolicy, "Background");
        this.objects.delete(key);
        send(res, 200, obj);
        return;
      }
    }
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

const claimsPath = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/team/sandboxclaims";
const sandboxesPath = "/apis/agents.x-k8s.io/v1beta1/namespaces/team/sandboxes";

function ready(type: string, gen: number, status = "True", reason = "Ready", message = ""): Record<string, unknown> {
  return { type, status, reason, message, observedGeneration: gen };
}

describe("client (Kubernetes side, stand-in API server and router)", () => {
  let agent: LocalAgent;
  let api: FakeAPI;
  let router: Server;
  let routerURL = "";
  let client: Client;
  /** The router answers this many sandbox requests with its own 503, as while its cache lags. */
  let notReadyFor = 0;

  before(async () => {
    agent = await LocalAgent.start();
    api = new FakeAPI();
    await api.listen();
    // The router: the caller's token is checked, /sandboxes/team/<name>/ goes to the agent with its token.
    router = createServer((req, res) => {
      if (req.headers.authorization !== "Bearer kube-token") return send(res, 401, { error: "no", code: 401 });
      const url = req.url ?? "";
      if (url.startsWith("/v1/claims/team/")) return send(res, 200, { token: "claim-token", expiresAt: "2030-01-01T00:00:00Z" });
      const m = /^\/sandboxes\/team\/([^/]+)(\/.*)$/.exec(url);
      if (m && notReadyFor > 0) {
        notReadyFor--;
        return send(res, 503, { error: `sandbox team/${m[1]} is not ready`, code: 503 });
      }
      if (!m || !api.objects.has(`${sandboxesPath}/${m[1]}`)) return send(res, 404, { error: `sandbox team/${m?.[1] ?? ""} not found`, code: 404 });
      const up = new URL(agent.url);
      const fwd = request({ host: up.hostname, port: up.port, path: m[2], method: req.method,
        headers: { ...req.headers, authorization: `Bearer ${agent.token}` } }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      req.pipe(fwd);
    });
    const port = await freePort();
    await new Promise<void>((ok) => router.listen(port, "127.0.0.1", ok));
    routerURL = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    api.endWatches();
    await new Promise((ok) => api.server.close(ok));
    await new Promise((ok) => router.close(ok));
    await agent.stop();
  });
  beforeEach(() => {
    api.log.length = 0;
    api.onWrite = () => undefined;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "c", server: api.url, skipTLSVerify: true }],
      users: [{ name: "u", token: "kube-token" }],
      contexts: [{ name: "x", cluster: "c", user: "u", namespace: "team" }],
      currentContext: "x",
    });
    client = new Client({ kubeConfig: kc, routerURL, readyTimeoutMs: 10_000 });
  });

  /** controller binds each new claim to a new Ready Sandbox, as kubox-controller does. */
  function controller(): void {
    api.onWrite = (key, obj, verb) => {
      if (key.startsWith(claimsPath) && verb === "create") {
        const name = `${obj.metadata.name ?? ""}-sb`;
        setImmediate(() => {
          api.put(`${sandboxesPath}/${name}`, { apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox",
            metadata: { name, namespace: "team", generation: 1 }, spec: { operatingMode: "Running" },
            status: { podIPs: ["127.0.1.1"], conditions: [ready("Ready", 1)] } }, "ADDED");
          api.put(key, { ...obj, status: { observedGeneration: 1, sandbox: { name }, conditions: [ready("Ready", 1)] } });
        });
      }
      if (key.startsWith(sandboxesPath) && verb === "patch") {
        const gen = obj.metadata.generation ?? 0;
        const suspended = obj.spec?.operatingMode === "Suspended";
        setImmediate(() => api.put(key, { ...obj, status: suspended
          ? { conditions: [ready("Ready", gen, "False", "SandboxSuspended"), ready("Suspended", gen)] }
          : { podIPs: ["127.0.1.2"], conditions: [ready("Ready", gen), ready("Suspended", gen, "False", "Running")] } }));
      }
    };
  }

  test("claim creates the claim, waits with one watch, and the sandbox runs through the router", async () => {
    controller();
    const sb = await client.claim({ pool: "python" }, { ttlMs: 3_600_000, env: { B: "2", A: "1" }, suspendAfterMs: 600_000,
      podLabels: { run: "42" }, labels: { app: "ci" } });
    assert.deepEqual(api.log, [`POST ${claimsPath}`, `GET ${claimsPath} watch`, `GET ${sandboxesPath}/${sb.name}`]);
    const claim = api.objects.get(`${claimsPath}/${sb.claimName}`);
    assert.ok(claim);
    assert.equal(claim.metadata.labels?.[createdByLabel], createdBy);
    assert.equal(claim.metadata.labels?.app, "ci");
    assert.equal(claim.metadata.generateName, "kubox-");
    assert.ok(claim.metadata.annotations?.["agents.x-k8s.io/client-first-requested-at"]);
    assert.deepEqual(claim.spec?.warmPoolRef, { name: "python" });
    assert.deepEqual(claim.spec?.env, [{ name: "A", value: "1" }, { name: "B", value: "2" }]);
    assert.deepEqual(claim.spec?.idlePolicy, { suspendAfter: "600s" });
    assert.deepEqual(claim.spec?.additionalPodMetadata, { labels: { run: "42" } });
    assert.equal((claim.spec?.lifecycle as { shutdownPolicy?: string }).shutdownPolicy, "Delete");

    const res = await sb.run("echo through the router");
    assert.equal(res.stdout, "through the router\n");
    await sb.files.write("/r.txt", "r");
    assert.equal(await sb.files.readText("/r.txt"), "r");

    await sb.close();
    await sb.close();
    assert.equal(api.objects.has(`${claimsPath}/${sb.claimName}`), false);
    assert.equal(api.log.filter((l) => l.startsWith("DELETE")).length, 1);
  });

  test("a watch the server ends is reopened from the last version; an expired one reads afresh", async () => {
    api.onWrite = (key, obj, verb) => {
      if (!key.startsWith(claimsPath) || verb !== "create") return;
      setImmediate(() => {
        api.put(key, { ...obj, status: { observedGeneration: 1, conditions: [ready("Ready", 1, "False", "Pending")] } });
        api.endWatches();
        api.expireNextWatch = true;
        const name = `${obj.metadata.name ?? ""}-sb`;
        api.put(`${sandboxesPath}/${name}`, { metadata: { name, namespace: "team", generation: 1 },
          status: { podIPs: ["127.0.1.1"], conditions: [ready("Ready", 1)] } }, "ADDED");
        setTimeout(() => api.put(key, { ...obj, status: { observedGeneration: 1, sandbox: { name }, conditions: [ready("Ready", 1)] } }), 50);
      });
    };
    const seen: string[] = [];
    const sb = await client.claim({ template: "python" }, { onProgress: (c) => seen.push(String((c.status?.conditions as { reason: string }[] | undefined)?.[0]?.reason)) });
    assert.ok(seen.includes("Pending"), seen.join());
    const watches = api.log.filter((l) => l.endsWith("watch")).length;
    assert.ok(watches >= 2, api.log.join("\n"));
    assert.ok(api.log.includes(`GET ${claimsPath}/${sb.claimName}`), "the expired watch was followed by a read");
    await sb.close();
  });

  test("a claim that fails for good throws ClaimFailedError with the fix, and is deleted", async () => {
    api.onWrite = (key, obj, verb) => {
      if (key.startsWith(claimsPath) && verb === "create") {
        setImmediate(() => api.put(key, { ...obj, status: { observedGeneration: 1,
          conditions: [ready("Ready", 1, "False", "WarmPoolNotFound", 'SandboxWarmPool "nope" not found')] } }));
      }
    };
    await assert.rejects(client.claim({ pool: "nope" }), (e: unknown) => {
      assert.ok(e instanceof ClaimFailedError, String(e));
      assert.equal(e.reason, "WarmPoolNotFound");
      assert.match(e.message, /create SandboxWarmPool "nope" in namespace team/);
      return true;
    });
    const created = api.log.find((l) => l.startsWith(`DELETE ${claimsPath}/`));
    assert.ok(created, api.log.join("\n"));
    assert.equal(api.objects.has(created.slice("DELETE ".length)), false);
  });

  test("a claim not Ready in readyTimeoutMs throws SandboxTimeoutError with the last condition, and is deleted", async () => {
    const quick = new Client({ kubeConfig: client.kube.config, routerURL, readyTimeoutMs: 200 });
    await assert.rejects(quick.claim({ pool: "slow" }), (e: unknown) => {
      assert.ok(e instanceof SandboxTimeoutError, String(e));
      assert.match(e.message, /no Ready condition yet \(is kubox-controller running\?\)/);
      assert.match(e.message, /is pool "slow" filling/);
      return true;
    });
    assert.ok(api.log.some((l) => l.startsWith(`DELETE ${claimsPath}/`)));
  });

  test("a claim's egress options reach spec.egress; one its template rejects throws the controller's message with the fix", async () => {
    const rejected = "spec.egress.allowDomains evil.test is not covered by SandboxTemplate agent's egress.allowDomains [pypi.org]: " +
      "a claim may only narrow its template's egress; allow only names among or below those";
    api.onWrite = (key, obj, verb) => {
      if (key.startsWith(claimsPath) && verb === "create") {
        setImmediate(() => api.put(key, { ...obj, status: { observedGeneration: 1,
          conditions: [ready("Ready", 1, "False", "EgressRejected", rejected)] } }));
      }
    };
    const egress = { allowDomains: ["evil.test"], denyDomains: ["*.evil.test"], denyCIDRs: ["192.0.2.0/24"] };
    const made = await client.createClaim({ template: "agent" }, egress);
    assert.deepEqual(made.spec?.egress, egress);
    await assert.rejects(client.claim({ template: "agent" }, egress), (e: unknown) => {
      assert.ok(e instanceof ClaimFailedError, String(e));
      assert.equal(e.reason, "EgressRejected");
      assert.equal(e.conditionMessage, rejected);
      assert.ok(e.message.includes(rejected), e.message);
      assert.match(e.message, /pass allowDomains among or below the template's spec\.egress\.allowDomains/);
      return true;
    });
    const posts = api.log.filter((l) => l.startsWith("POST"));
    assert.equal(posts.length, 2);
    const deleted = api.log.find((l) => l.startsWith(`DELETE ${claimsPath}/`));
    assert.ok(deleted, api.log.join("\n"));
    api.log.length = 0;
    await assert.rejects(client.claim({ template: "agent" }, { allowDomains: ["PyPI.org"] }), /allowDomains: "PyPI.org" is not a domain/);
    assert.deepEqual(api.log, [], "a bad value is refused before anything is sent");
  });

  test("suspend and resume patch the Sandbox and wait for its state", async () => {
    controller();
    const sb = await client.claim({ pool: "python" });
    await sb.suspend();
    assert.equal(sb.object?.spec?.operatingMode, "Suspended");
    notReadyFor = 1;
    await assert.rejects(sb.run(["true"]), (e: unknown) => e instanceof SandboxNotReadyError && /is not ready/.test(e.message));
    await sb.resume();
    assert.deepEqual(sb.object?.status?.podIPs, ["127.0.1.2"]);
    // Seen Ready: the router's 503s (its cache lagging) are sent again, unary calls and file reads alike.
    notReadyFor = 2;
    assert.equal((await sb.run(["true"])).exitCode, 0);
    notReadyFor = 2;
    await sb.files.write("/after-resume.txt", "x");
    notReadyFor = 2;
    assert.equal(await sb.files.readText("/after-resume.txt"), "x");
    await sb.close();
  });

  test("connect and open find existing ones; mintClaimToken asks the router", async () => {
    controller();
    const claimed = await client.claim({ pool: "python" }, { name: "named" });
    const connected = await client.connect("named");
    assert.equal(connected.name, claimed.name);
    await connected.close();
    assert.ok(api.objects.has(`${claimsPath}/named`), "close of a connected sandbox keeps the claim");
    const opened = await client.open(claimed.name);
    assert.equal(opened.claimName, "");
    const tok = await client.mintClaimToken("named", { ttlSeconds: 60 });
    assert.equal(tok.token, "claim-token");
    assert.equal(tok.expiresAt?.toISOString(), "2030-01-01T00:00:00.000Z");
    assert.throws(() => Sandbox.attach(routerURL, "").files, /token/);
    await claimed.close();
  });
});

describe("claim options (no server)", () => {
  const now = new Date("2026-12-04T08:00:00Z");
  const build = (opts: ClaimOptions) => buildClaim({ pool: "p" }, { ...opts, namespace: "ns" }, now);

  test("egress lists become spec.egress, without repeats, and nothing when they are empty", () => {
    const c = build({ allowDomains: ["pypi.org", "*.pythonhosted.org", "pypi.org"], denyDomains: ["*.evil.test"],
      denyCIDRs: ["192.0.2.0/24", "10.0.0.1/8", "2001:db8::/32"] });
    assert.deepEqual(c.spec?.egress, { allowDomains: ["pypi.org", "*.pythonhosted.org"], denyDomains: ["*.evil.test"],
      denyCIDRs: ["192.0.2.0/24", "10.0.0.1/8", "2001:db8::/32"] });
    assert.deepEqual(build({ denyDomains: ["upload.pypi.org"] }).spec?.egress, { denyDomains: ["upload.pypi.org"] });
    assert.equal(build({}).spec?.egress, undefined);
    assert.equal(build({ allowDomains: [], denyCIDRs: [] }).spec?.egress, undefined);
  });

  test("a snapshot, by name or as the object, becomes spec.snapshotRef", () => {
    assert.deepEqual(build({ snapshot: "numpy-loaded" }).spec?.snapshotRef, { name: "numpy-loaded" });
    const snap = { kind: "SandboxSnapshot", metadata: { name: "py-snap-x2k9q", namespace: "ns" } };
    assert.deepEqual(build({ snapshot: snap }).spec?.snapshotRef, { name: "py-snap-x2k9q" });
    assert.equal(build({}).spec?.snapshotRef, undefined);
    assert.throws(() => build({ snapshot: { metadata: {} } }), /has no metadata.name/);
  });

  test("a value the API would refuse throws ConfigError naming it and the form to use", () => {
    const domain = "such as pypi.org, or *.pythonhosted.org";
    const cidr = "such as 203.0.113.0/24 or 2001:db8::/32";
    const cases: [Record<string, unknown>, string, string][] = [
      [{ allowDomains: ["PyPI.org"] }, 'allowDomains: "PyPI.org" is not a domain', domain],
      [{ allowDomains: ["https://pypi.org"] }, 'allowDomains: "https://pypi.org" is not a domain', domain],
      [{ denyDomains: ["pypi.org\n"] }, "denyDomains: ", domain],
      [{ allowDomains: ["*"] }, 'allowDomains: "*" is not a domain', domain],
      [{ allowDomains: ["api.*.test"] }, "is not a domain", domain],
      [{ allowDomains: ["-a.test"] }, "is not a domain", domain],
      [{ denyDomains: [`${"a".repeat(64)}.test`] }, "is not a domain", domain],
      [{ denyDomains: [Array(4).fill("a".repeat(63)).join(".")] }, "is not a domain", domain], // 255 characters
      [{ denyDomains: [7] }, "denyDomains: 7 is not a domain", domain],
      [{ denyCIDRs: ["10.0.0.0"] }, 'denyCIDRs: "10.0.0.0" is not a CIDR', cidr],
      [{ denyCIDRs: ["10.0.0.0/33"] }, "is not a CIDR", cidr],
      [{ denyCIDRs: ["10.0.0.0/08"] }, "is not a CIDR", cidr],
      [{ denyCIDRs: ["10.0.0.0/255.0.0.0"] }, "is not a CIDR", cidr],
      [{ denyCIDRs: ["010.0.0.0/8"] }, "is not a CIDR", cidr],
      [{ denyCIDRs: ["2001:db8::/129"] }, "is not a CIDR", cidr],
      [{ denyCIDRs: ["fe80::1%eth0/64"] }, "is not a CIDR", cidr],
      [{ denyCIDRs: ["::ffff:192.0.2.0/120"] }, "is not a CIDR", cidr], // IPv4-mapped: CEL's isCIDR refuses it
      [{ denyCIDRs: ["0:0:0:0:0:ffff:c000:200/120"] }, "is not a CIDR", cidr],
      [{ denyCIDRs: ["evil.test/24"] }, "is not a CIDR", cidr],
    ];
    for (const [opts, bad, fix] of cases) {
      assert.throws(() => egressSpec(opts), (e: unknown) => {
        assert.ok(e instanceof ConfigError, `${JSON.stringify(opts)}: ${String(e)}`);
        assert.ok(e.message.includes(bad) && e.message.includes(fix), e.message);
        return true;
      });
    }
    assert.deepEqual(egressSpec({ denyCIDRs: ["::ffff:1:2:3/128", "::1.2.3.4/128"] }), { denyCIDRs: ["::ffff:1:2:3/128", "::1.2.3.4/128"] });
  });

  test("egress lists are arrays within the API's bounds", () => {
    assert.throws(() => egressSpec({ allowDomains: "pypi.org" as unknown as string[] }),
      /allowDomains must be an array of strings, not "pypi.org": write allowDomains: \["pypi.org"\]/);
    const ok = egressSpec({ allowDomains: Array.from({ length: 64 }, (_, i) => `d${i}.test`),
      denyCIDRs: Array.from({ length: 32 }, (_, i) => `10.0.${i}.0/24`) });
    assert.equal(ok?.allowDomains?.length, 64);
    assert.equal(ok?.denyCIDRs?.length, 32);
    assert.throws(() => egressSpec({ denyDomains: Array.from({ length: 65 }, (_, i) => `d${i}.test`) }),
      /denyDomains has 65 entries; a claim may give at most 64/);
    assert.throws(() => egressSpec({ denyCIDRs: Array.from({ length: 33 }, (_, i) => `10.0.${i}.0/24`) }),
      /denyCIDRs has 33 entries; a claim may give at most 32/);
  });
});

describe("snapshots and forks (no server)", () => {
  test("a fork copies the source's spec and starts from the snapshot", () => {
    const src: KubeObject = { metadata: { namespace: "team-a", name: "py", labels: { "agents.x-k8s.io/claim-uid": "c" } },
      spec: { operatingMode: "Suspended", podTemplate: { spec: { containers: [{ name: "main" }] } } }, status: { memory: { snapshot: "own" } } };
    const f = forkOf(src, "snap");
    assert.deepEqual(f.metadata, { namespace: "team-a", generateName: "py-fork-", labels: { "kubox.dev/fork-of": "py" } });
    assert.equal(f.spec?.operatingMode, "Running");
    assert.deepEqual(f.spec?.snapshotRef, { name: "snap" });
    assert.equal(f.status, undefined);
    ((f.spec?.podTemplate as { spec: { containers: { name: string }[] } }).spec.containers[0]).name = "changed";
    assert.equal(((src.spec?.podTemplate as { spec: { containers: { name: string }[] } }).spec.containers[0]).name, "main");
    const long = "a" + "b".repeat(62);
    assert.equal(generatedPrefix(long, "-fork-").length, 58);
  });

  test("a snapshot is taken, waited for, or failed for good", () => {
    const snap: KubeObject = { metadata: { namespace: "n", name: "s" }, status: {} };
    assert.equal(snapshotTaken(snap), false);
    snap.status = { conditions: [{ type: "Ready", status: "True", reason: "Taken" }], snapshot: { sizeBytes: 1 } };
    assert.equal(snapshotTaken(snap), true);
    snap.status = { conditions: [{ type: "Ready", status: "False", reason: "CheckpointFailed", message: "not gVisor" }] };
    assert.throws(() => snapshotTaken(snap), (e: unknown) => e instanceof SnapshotFailedError && /n\/s: the snapshot could not be taken: not gVisor/.test((e).message));
    assert.deepEqual(snapshotOf("n", "py").metadata, { namespace: "n", generateName: "py-snap-" });
    assert.deepEqual(snapshotOf("n", "py").spec, { sandboxRef: { name: "py" } });
    assert.deepEqual(snapshotOf("n", "py", { filesystemOnly: true }).spec, { sandboxRef: { name: "py" }, type: "Filesystem" });
  });

  test("whether a suspend kept the memory", () => {
    const sb: KubeObject = { metadata: {}, status: { conditions: [{ type: "MemoryKept", status: "False", reason: "CheckpointFailed", message: "not gVisor" }] } };
    assert.equal(memoryNotKept(sb), "not gVisor");
    sb.status = { conditions: [{ type: "MemoryKept", status: "True", reason: "Checkpointed", message: "kept" }], memory: { snapshot: "s" } };
    assert.equal(memoryNotKept(sb), "");
    assert.match(memoryNotKept({ metadata: {}, status: {} }), /did not say why/);
  });
});
