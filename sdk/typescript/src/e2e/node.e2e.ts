// The SDK on a real node: a warm gVisor sandbox of the sample python pool claimed, used and
// released through the in-cluster kubox-router, with nothing configured but KUBECONFIG (the
// router's URL comes from its kubox.dev/router extension). test/e2e's TestTypeScriptSDK (`make
// test-e2e`) creates the namespace and the pool and runs this file with KUBECONFIG and
// KUBOX_TEST_NAMESPACE set; it is not one of the unit tests `npm test` runs.

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { test } from "node:test";

import { Client, NotFoundError } from "../index.js";

const namespace = process.env.KUBOX_TEST_NAMESPACE ?? "";

void test("claim from the pool, run, stream with stdin, move 8 MiB, release", async () => {
  assert.ok(namespace && process.env.KUBECONFIG, "KUBECONFIG and KUBOX_TEST_NAMESPACE are not set: run this through `make test-e2e` (TestTypeScriptSDK)");
  const client = new Client({ namespace });
  try {
    const sb = await client.claim({ pool: "python" }, { ttlMs: 600_000 });
    try {
      const res = await sb.run("python3 -c 'import sys; print(6*7); sys.exit(3)'");
      assert.deepEqual([res.exitCode, res.stdout], [3, "42\n"]);
      const gvisor = await sb.run(["python3", "-c", "print('gvisor' in open('/proc/version').read().lower())"]);
      assert.equal(gvisor.stdout, "True\n");

      const data = randomBytes(8 << 20);
      await sb.files.write("/tmp/input.bin", data);
      const sum = await sb.run(["python3", "-c", "import hashlib; print(hashlib.sha256(open('/tmp/input.bin','rb').read()).hexdigest())"]);
      assert.equal(sum.stdout.trim(), createHash("sha256").update(data).digest("hex"));
      assert.ok(Buffer.from(await sb.files.read("/tmp/input.bin")).equals(data));

      let out = "";
      const proc = await sb.start(["python3", "-u", "-c", "import sys\nfor l in sys.stdin: print(l.strip().upper())"], {
        stdin: true,
        onStdout: (ev) => void (out += ev.text),
      });
      await proc.sendInput("hello\n");
      await proc.closeInput();
      assert.equal(await proc.wait(), 0);
      assert.equal(out, "HELLO\n");
    } finally {
      await sb.close();
    }
    await assert.rejects(client.connect(sb.claimName), NotFoundError);
  } finally {
    await client.close();
  }
});
