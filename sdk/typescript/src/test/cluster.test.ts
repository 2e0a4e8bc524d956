// The SDK against a real environment: kube-apiserver, kubox's controllers, kubox-router and
// agents, as test/integration/pysdk brings one up for the Python SDK. It runs when KUBOX_TEST_*
// describe one (the variables pysdk passes to pytest) and is skipped otherwise.

import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";

import { ClaimFailedError, Client, ConfigError, ForbiddenError, MemoryNotKeptError, NotFoundError, Sandbox, SandboxNotReadyError, SandboxTimeoutError,
  SnapshotFailedError } from "../index.js";

const env = {
  namespace: process.env.KUBOX_TEST_NAMESPACE ?? "",
  routerURL: process.env.KUBOX_TEST_ROUTER_URL ?? "",
  pool: process.env.KUBOX_TEST_POOL ?? "",
  template: process.env.KUBOX_TEST_TEMPLATE ?? "",
  pending: process.env.KUBOX_TEST_PENDING_TEMPLATE ?? "",
  noConnectToken: process.env.KUBOX_TEST_NOCONNECT_TOKEN ?? "",
  routerService: process.env.KUBOX_TEST_ROUTER_SERVICE ?? "",
};
const skip = env.namespace && env.routerURL ? false : "needs a real environment (KUBOX_TEST_NAMESPACE, KUBOX_TEST_ROUTER_URL, KUBECONFIG)";

describe("a real cluster: API server, controllers, router, agents", { skip }, () => {
  const client = () => new Client({ namespace: env.namespace, routerURL: env.routerURL });

  test("runCode keeps state, streams output as printed, and keeps contexts apart, through the router", async () => {
    const sb = await client().claim({ pool: env.pool }, { ttlMs: 600_000 });
    try {
      assert.equal((await sb.runCode("x = 41")).error, undefined);
      const ex = await sb.runCode("x + 1");
      assert.deepEqual([ex.text, ex.error, ex.executionCount, ex.results.map((r) => r.isMainResult)], ["42", undefined, 2, [true]]);

      const err = await sb.runCode("def f():\n    return 1 / 0\nf()");
      assert.equal(err.error?.name, "ZeroDivisionError");
      assert.match(err.error?.traceback ?? "", /return 1 \/ 0/);

      // The code waits for a file that only the stdout callback creates on seeing "first": it
      // ends only if output is delivered while it runs. (The interpreter runs on this host.)
      const gate = join(mkdtempSync(join(tmpdir(), "kubox-ts-")), "go");
      const seen: string[] = [];
      const code = `import os, time\nprint('first', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}):\n    time.sleep(0.01)\nprint('second', flush=True)\n`;
      const streamed = await sb.runCode(code, {
        timeoutMs: 60_000,
        onStdout: (t) => {
          seen.push(t);
          if (seen.join("") === "first\n") writeFileSync(gate, "");
        },
      });
      assert.equal(seen.join(""), "first\nsecond\n");
      assert.deepEqual(streamed.logs.stdout, seen);

      const other = await sb.createCodeContext({ language: "python" });
      assert.equal((await sb.runCode("x", { context: other })).error?.name, "NameError", "a second context must not see x");
      assert.ok((await sb.listCodeContexts()).some((c) => c.id === other.id));
      await sb.runCode("y = 7", { context: other });
      await sb.restartCodeContext(other);
      assert.equal((await sb.runCode("y", { context: other })).error?.name, "NameError");
      assert.equal((await sb.runCode("x")).text, "41");
      await sb.removeCodeContext(other);
      await assert.rejects(sb.runCode("1", { context: other }), (e: Error) => e instanceof NotFoundError && e.message.includes(other.id));
      assert.equal((await sb.runCode("const n = 2; n + 1", { language: "javascript" })).text, "3");
      assert.equal((await sb.runCode("import os\nos.environ['G']", { envs: { G: "hi" } })).text, "hi");
    } finally {
      await sb.close();
    }
  });

  test("claim from the pool, run, move files, close", async () => {
    const sb = await client().claim({ pool: env.pool }, { ttlMs: 600_000 });
    try {
      const res = await sb.run("echo $((6*7))");
      assert.equal(res.stdout, "42\n");
      await sb.files.write("/note.txt", "kept");
      assert.equal(await sb.files.readText("/note.txt"), "kept");
      let out = "";
      const proc = await sb.start(["sh", "-c", "cat; echo done"], { stdin: "in ", onStdout: (ev) => void (out += ev.text) });
      assert.equal(await proc.wait(), 0);
      assert.equal(out, "in done\n");
    } finally {
      await sb.close();
    }
    await assert.rejects(client().connect(sb.claimName), NotFoundError);
  });

  test("claim from a template; suspend and resume", async () => {
    const sb = await client().claim({ template: env.template });
    try {
      await sb.suspend();
      await sb.resume();
      assert.equal((await sb.run(["true"])).exitCode, 0);
    } finally {
      await sb.close();
    }
  });

  test("without kubox-node, snapshot, fork and a suspend keeping memory say why", async () => {
    const sb = await client().claim({ template: env.template });
    try {
      await assert.rejects(sb.snapshot(), (e: unknown) => e instanceof SnapshotFailedError && /controllers\.sandbox\.memory\.tokenFile/.test((e).message));
      await assert.rejects(sb.fork(2), SnapshotFailedError);
      await assert.rejects(sb.fork(0), ConfigError);
      await assert.rejects(sb.suspend({ keepMemory: true }),
        (e: unknown) => e instanceof MemoryNotKeptError && /suspended without its memory: .*tokenFile/.test((e).message));
      assert.deepEqual(sb.object?.spec?.suspendPolicy, { keepMemory: true });
      await sb.resume();
    } finally {
      await sb.close();
    }
  });

  test("a claim token alone reaches the claim's sandbox", async () => {
    const c = client();
    const sb = await c.claim({ pool: env.pool });
    try {
      const tok = await c.mintClaimToken(sb.claimName, { ttlSeconds: 300 });
      assert.ok(tok.expiresAt && tok.expiresAt > new Date());
      const only = Sandbox.claimToken(sb.claimName, { routerURL: env.routerURL, token: tok.token, namespace: env.namespace });
      assert.equal((await only.run(["echo", "token only"])).stdout, "token only\n");
      const other = Sandbox.claimToken("someone-elses", { routerURL: env.routerURL, token: tok.token, namespace: env.namespace });
      await assert.rejects(other.run(["true"]));
    } finally {
      await sb.close();
    }
  });

  test("a missing pool fails for good; a Pending template times out", async () => {
    await assert.rejects(client().claim({ pool: "no-such-pool" }), (e: unknown) => e instanceof ClaimFailedError && e.reason === "WarmPoolNotFound");
    const quick = new Client({ namespace: env.namespace, routerURL: env.routerURL, readyTimeoutMs: 3000 });
    await assert.rejects(quick.claim({ template: env.pending }), SandboxTimeoutError);
  });

  test("a token RBAC does not let connect gets ForbiddenError from the router", { skip: !env.noConnectToken }, async () => {
    const sb = await client().claim({ pool: env.pool });
    try {
      const denied = Sandbox.fromRouter(sb.name, { routerURL: env.routerURL, token: env.noConnectToken, namespace: env.namespace });
      await assert.rejects(denied.run(["true"]), (e: unknown) => e instanceof ForbiddenError && /sandboxes\/connect/.test(e.message));
    } finally {
      await sb.close();
    }
  });

  test("port-forward: only a kubeconfig, the router's Pod found through its Service", { skip: !env.routerService }, async () => {
    const c = new Client({ namespace: env.namespace, connection: "port-forward", routerNamespace: env.namespace, routerService: env.routerService });
    assert.equal(c.connection, "port-forward");
    const sb = await c.claim({ pool: env.pool });
    try {
      assert.equal((await sb.run(["echo", "forwarded"])).stdout, "forwarded\n");
      await sb.files.write("/pf.txt", "through the API server");
      assert.equal(await sb.files.readText("/pf.txt"), "through the API server");
    } finally {
      await sb.close();
      await c.close();
    }
  });

  test("direct: the Pod IP and the agent token from its Secret, no router", async () => {
    const c = new Client({ namespace: env.namespace, connection: "direct" });
    const sb = await c.claim({ pool: env.pool });
    try {
      assert.equal((await sb.run(["echo", "direct"])).stdout, "direct\n");
      await sb.files.write("/direct.txt", "d");
      assert.equal(await sb.files.readText("/direct.txt"), "d");
      await sb.suspend();
      await assert.rejects(sb.run(["true"]), (e: unknown) => e instanceof SandboxNotReadyError && /no Pod IP/.test(e.message));
      // The harness starts a resumed sandbox's agent only after its Pod reports Ready, so the
      // first call after resume is not checked here (a real Pod is Ready once its agent is).
      await sb.resume();
    } finally {
      await sb.close();
    }
  });
});
