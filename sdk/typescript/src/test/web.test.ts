// @kubox/sdk/web in Node (which has fetch too) against a real kubox-agent: the same calls as the
// Node entry go through fetch; test/integration/tsweb runs it in Chromium through the router.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ConfigError, Sandbox, SandboxConnectionError, UnauthorizedError } from "../web.js";
import { LocalAgent } from "./agent.js";

describe("@kubox/sdk/web", () => {
  let agent: LocalAgent;
  let sb: Sandbox;
  let fetches = 0;
  const realFetch = globalThis.fetch;
  before(async () => {
    agent = await LocalAgent.start();
    sb = Sandbox.attach(agent.url, agent.token, { name: "web-sandbox" });
    globalThis.fetch = (input, init) => {
      fetches++;
      return realFetch(input, init);
    };
  });
  after(async () => {
    globalThis.fetch = realFetch;
    await agent.stop();
  });

  test("runs and streams processes over fetch, stdin through SendInput", async () => {
    const before = fetches;
    assert.equal((await sb.run(["sh", "-c", "echo web-$((6*7))"])).stdout, "web-42\n");
    const chunks: string[] = [];
    const input = (async function* () {
      yield "a ";
      await new Promise((r) => setTimeout(r, 10));
      yield "b";
    })();
    const proc = await sb.start(["sh", "-c", "echo one; cat; echo; echo two"], { stdin: input, onStdout: (ev) => void chunks.push(ev.text) });
    assert.equal(await proc.wait(), 0);
    assert.equal(chunks.join(""), "one\na b\ntwo\n");
    assert.ok(fetches - before >= 3, `the calls went through fetch (${fetches - before} fetches)`);
  });

  test("moves files: text, a web stream (sent whole), stat and list", async () => {
    await sb.files.write("/w/a.txt", "from web");
    assert.equal(await sb.files.readText("/w/a.txt"), "from web");
    const parts = ["x".repeat(100_000), "y".repeat(100_000)];
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        const p = parts.shift();
        if (p === undefined) c.close();
        else c.enqueue(new TextEncoder().encode(p));
      },
    });
    await sb.files.write("/w/big.txt", stream);
    assert.equal((await sb.files.stat("/w/big.txt")).size, 200_000);
    assert.deepEqual((await sb.files.list("/w")).map((f) => f.name), ["a.txt", "big.txt"]);
  });

  test("says what is missing or wrong", async () => {
    await assert.rejects(sb.files.download("/w/a.txt", "a.txt"), (e: unknown) => e instanceof ConfigError && /files\.read/.test(e.message));
    await assert.rejects(sb.files.upload("a.txt", "/w/b.txt"), ConfigError);
    await assert.rejects(Sandbox.attach(agent.url, "wrong").run(["true"]), UnauthorizedError);
    await assert.rejects(Sandbox.attach("http://127.0.0.1:9", agent.token).run(["true"]),
      (e: unknown) => e instanceof SandboxConnectionError && /cors-allowed-origins/.test(e.message));
  });
});
