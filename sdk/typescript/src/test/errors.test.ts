// Errors the SDK throws, against a real kubox-agent (a wrong token, a stream broken mid-way) and
// against a stand-in for kubox-router's own answers ({"error": "...", "code": N}, its wire format).

import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer, connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";

import {
  ConfigError,
  ForbiddenError,
  NotFoundError,
  Sandbox,
  SandboxConnectionError,
  SandboxNotReadyError,
  SandboxTimeoutError,
  UnauthorizedError,
} from "../index.js";
import { freePort, LocalAgent } from "./agent.js";

/** A TCP proxy to a port whose connections the test can cut, as a lost network would. */
class CuttingProxy {
  readonly #sockets = new Set<Socket>();
  readonly #server = createServer((client) => {
    const upstream = connect(this.target, "127.0.0.1");
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on("close", () => this.#sockets.delete(s));
      s.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  port = 0;
  constructor(readonly target: number) {}
  async listen(): Promise<void> {
    this.port = await freePort();
    await new Promise<void>((ok) => this.#server.listen(this.port, "127.0.0.1", ok));
  }
  cut(): void {
    for (const s of this.#sockets) s.destroy();
  }
  async close(): Promise<void> {
    this.cut();
    await new Promise((ok) => this.#server.close(ok));
  }
}

describe("errors", () => {
  let agent: LocalAgent;
  let router: Server;
  let routerURL = "";
  before(async () => {
    agent = await LocalAgent.start();
    // kubox-router's answers for requests it refuses itself (internal/router/httperr.go's format).
    router = createHttpServer((req, res) => {
      const [code, msg] = req.url?.includes("/sandboxes/team-a/asleep/")
        ? [503, "sandbox team-a/asleep is suspended"]
        : req.url?.includes("/claims/team-a/theirs/")
          ? [403, 'user "bob" cannot create sandboxclaims/connect']
          : [404, "claim team-a/nope not found"];
      res.writeHead(code, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: msg, code }) + "\n");
    });
    const port = await freePort();
    await new Promise<void>((ok) => router.listen(port, "127.0.0.1", ok));
    routerURL = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await agent.stop();
    await new Promise((ok) => router.close(ok));
  });

  test("a wrong token is UnauthorizedError that names the sandbox and the fix", async () => {
    const sb = Sandbox.attach(agent.url, "not-the-token", { name: "team-a/box" });
    await assert.rejects(sb.run(["true"]), (e: unknown) => {
      assert.ok(e instanceof UnauthorizedError, String(e));
      assert.equal(e.status, 401);
      assert.match(e.message, /^sandbox team-a\/box: /);
      assert.match(e.message, /claim token/);
      return true;
    });
    await assert.rejects(sb.files.readText("/x"), UnauthorizedError);
  });

  test("nothing listening is SandboxConnectionError", async () => {
    const sb = Sandbox.attach(`http://127.0.0.1:${await freePort()}`, "t", { name: "team-a/box" });
    await assert.rejects(sb.run(["true"]), (e: unknown) => e instanceof SandboxConnectionError && /sandbox team-a\/box: cannot reach/.test(e.message));
    await assert.rejects(sb.files.readText("/x"), SandboxConnectionError);
  });

  test("the router's own errors keep their status and message", async () => {
    const missing = Sandbox.claimToken("nope", { routerURL, token: "t", namespace: "team-a" });
    await assert.rejects(missing.run(["true"]), (e: unknown) => {
      assert.ok(e instanceof NotFoundError, String(e));
      assert.match(e.message, /^sandbox team-a\/nope: claim team-a\/nope not found \(HTTP 404\)/);
      return true;
    });
    await assert.rejects(missing.files.readText("/a"), NotFoundError);
    const theirs = Sandbox.claimToken("theirs", { routerURL, token: "t", namespace: "team-a" });
    await assert.rejects(theirs.start(["true"]), (e: unknown) => e instanceof ForbiddenError && /sandboxclaims\/connect/.test(e.message));
    const asleep = Sandbox.fromRouter("asleep", { routerURL, token: "t", namespace: "team-a" });
    await assert.rejects(asleep.files.list("/"), (e: unknown) => e instanceof SandboxNotReadyError && /resume it or wait for Ready/.test(e.message));
  });

  test("options that cannot work are ConfigError", () => {
    assert.throws(() => Sandbox.attach("", "t"), ConfigError);
    assert.throws(() => Sandbox.attach("http://x", ""), ConfigError);
    assert.throws(() => Sandbox.claimToken("c", { routerURL: "", token: "t" }), ConfigError);
    assert.throws(() => Sandbox.attach(agent.url, agent.token).keepAlive(10), ConfigError);
  });

  test("a stream cut mid-way is followed again from the last byte, without gaps or repeats", async () => {
    const proxy = new CuttingProxy(Number(new URL(agent.url).port));
    await proxy.listen();
    try {
      const sb = Sandbox.attach(`http://127.0.0.1:${proxy.port}`, agent.token);
      const direct = Sandbox.attach(agent.url, agent.token);
      const proc = await sb.start("echo before; while [ ! -f go ]; do sleep 0.02; done; echo after", { cwd: agent.root });
      const it = proc[Symbol.asyncIterator]();
      let out = "";
      while (!out.includes("before")) {
        const r = await it.next();
        if (!r.done && r.value.type === "output") out += r.value.text;
      }
      proxy.cut();
      await direct.files.write("/go", "");
      for (let r = await it.next(); !r.done; r = await it.next()) {
        if (r.value.type === "output") out += r.value.text;
      }
      assert.equal(out, "before\nafter\n");
      assert.equal(proc.exit?.exitCode, 0);
    } finally {
      await proxy.close();
    }
  });

  test("keepAlive calls the agent until stopped, and stop reports a refused token", async () => {
    const sb = Sandbox.attach(agent.url, agent.token);
    const ka = sb.keepAlive(1000);
    await ka.stop();
    const bad = Sandbox.attach(agent.url, "wrong").keepAlive(1000);
    await assert.rejects(bad.stop(), UnauthorizedError);
  });

  test("an aborted call is SandboxTimeoutError", async () => {
    const sb = Sandbox.attach(agent.url, agent.token);
    await assert.rejects(sb.files.list("/", { signal: AbortSignal.abort() }), SandboxTimeoutError);
  });
});
