// Files through a real kubox-agent: contents (text, bytes, streamed both ways), metadata,
// directories, moves, watches, and the errors that name the file.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";

import { APIError, ForbiddenError, NotFoundError, Sandbox, type FileEvent } from "../index.js";
import { LocalAgent } from "./agent.js";

describe("files", () => {
  let agent: LocalAgent;
  let sb: Sandbox;
  before(async () => {
    agent = await LocalAgent.start();
    sb = Sandbox.attach(agent.url, agent.token, { name: "test-sandbox" });
  });
  after(async () => agent.stop());

  test("write and read text and bytes, with the mode, creating parents", async () => {
    await sb.files.write("/a/b/hello.txt", "héllo\n", { mode: 0o600 });
    assert.equal(await sb.files.readText("/a/b/hello.txt"), "héllo\n");
    assert.equal(readFileSync(join(agent.root, "a/b/hello.txt"), "utf8"), "héllo\n");
    const info = await sb.files.stat("a/b/hello.txt");
    assert.equal(info.name, "hello.txt");
    assert.equal(info.path, "/a/b/hello.txt");
    assert.equal(info.type, "file");
    assert.equal(info.size, Buffer.byteLength("héllo\n"));
    assert.equal(info.mode, 0o600);
    assert.ok(info.modified instanceof Date);

    const bytes = new Uint8Array([0, 1, 2, 255]);
    await sb.files.write("/bin.dat", bytes);
    assert.deepEqual([...(await sb.files.read("/bin.dat"))], [0, 1, 2, 255]);
  });

  test("large contents stream both ways: a Readable in, an async iterable and a local file out", async () => {
    const data = randomBytes(8 << 20);
    const parts = Array.from({ length: 8 }, (_, i) => data.subarray(i << 20, (i + 1) << 20));
    await sb.files.write("/big.bin", Readable.from(parts));
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const c of await sb.files.stream("/big.bin")) {
      size += c.length;
      chunks.push(Buffer.from(c));
    }
    assert.equal(size, data.length);
    assert.ok(Buffer.concat(chunks).equals(data));

    const local = join(agent.dir, "down.bin");
    assert.equal(await sb.files.download("/big.bin", local), data.length);
    assert.ok(readFileSync(local).equals(data));

    const web = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("from a "));
        c.enqueue(new TextEncoder().encode("web stream"));
        c.close();
      },
    });
    await sb.files.write("/web.txt", web);
    assert.equal(await sb.files.readText("/web.txt"), "from a web stream");

    const src = join(agent.dir, "up.txt");
    writeFileSync(src, "uploaded");
    await sb.files.upload(src, "/up/loaded.txt");
    assert.equal(await sb.files.readText("/up/loaded.txt"), "uploaded");
  });

  test("list, makeDir, move, remove, exists", async () => {
    await sb.files.makeDir("/tree/sub");
    await sb.files.write("/tree/one.txt", "1");
    await sb.files.write("/tree/sub/two.txt", "2");
    const top = await sb.files.list("/tree");
    assert.deepEqual(top.map((f) => [f.path, f.type]), [["/tree/one.txt", "file"], ["/tree/sub", "directory"]]);
    assert.equal(top[1]?.isDir, true);
    const deep = await sb.files.list("/tree", { depth: 2 });
    assert.deepEqual(deep.map((f) => f.path), ["/tree/one.txt", "/tree/sub", "/tree/sub/two.txt"]);

    const moved = await sb.files.move("/tree/one.txt", "/tree/uno.txt");
    assert.equal(moved.path, "/tree/uno.txt");
    assert.equal(await sb.files.exists("/tree/one.txt"), false);
    assert.equal(await sb.files.exists("/tree/uno.txt"), true);

    await assert.rejects(sb.files.remove("/tree"), (e: unknown) => e instanceof APIError && e.status === 412);
    await sb.files.remove("/tree", { recursive: true });
    assert.equal(await sb.files.exists("/tree"), false);
  });

  test("watch reports changes made after it returns, and stops on close", async () => {
    await sb.files.makeDir("/watched");
    const watch = await sb.files.watch("/watched", { recursive: true });
    await sb.files.write("/watched/new.txt", "x");
    const seen: FileEvent[] = [];
    for await (const ev of watch) {
      seen.push(ev);
      if (ev.path === "/watched/new.txt" && (ev.op === "create" || ev.op === "write")) break;
    }
    assert.ok(seen.some((e) => e.path === "/watched/new.txt"), JSON.stringify(seen));

    const second = await sb.files.watch("/watched");
    second.close();
    const rest: FileEvent[] = [];
    for await (const ev of second) rest.push(ev);
    assert.deepEqual(rest, []);
  });

  test("a watch of a removed directory ends with NotFoundError", async () => {
    await sb.files.makeDir("/gone");
    const watch = await sb.files.watch("/gone");
    await sb.files.remove("/gone", { recursive: true });
    await assert.rejects(async () => {
      for await (const ev of watch) void ev;
    }, NotFoundError);
  });

  test("errors name the file and the sandbox", async () => {
    await assert.rejects(sb.files.readText("/missing.txt"), (e: unknown) => {
      assert.ok(e instanceof NotFoundError, String(e));
      assert.equal(e.status, 404);
      assert.match(e.message, /file \/missing.txt in sandbox test-sandbox/);
      return true;
    });
    await assert.rejects(sb.files.stat("/missing.txt"), (e: unknown) => {
      assert.ok(e instanceof NotFoundError, String(e));
      assert.equal(e.code, "not_found");
      assert.match(e.message, /file \/missing.txt in sandbox test-sandbox/);
      return true;
    });
    await assert.rejects(sb.files.stat("../../etc/passwd"), ForbiddenError);
    await assert.rejects(sb.files.watch("/missing-dir"), NotFoundError);
  });
});
