// Time to first output of client.claim(...) + sb.run(...) on a real cluster, one measurement per
// line read from stdin (the caller waits for the pool to be full before each), printed as a JSON
// line {"claimed_ms": ..., "output_ms": ...}. test/e2e's BenchmarkKuboxRun/typescript-sdk drives
// it; Node's start and the SDK's imports are not counted, as the Go SDK's are not.
//
//   node dist/bench/first_output.js --pool python --namespace bench-1

import { createInterface } from "node:readline";
import { parseArgs } from "node:util";

import { Client } from "../index.js";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { pool: { type: "string", default: "python" }, namespace: { type: "string" } } });
  const client = new Client({ namespace: values.namespace });
  try {
    for await (const line of createInterface({ input: process.stdin })) {
      void line;
      const t0 = performance.now();
      const sb = await client.claim({ pool: values.pool });
      const claimed = performance.now();
      const res = await sb.run("python3 -c 'print(1)'");
      const done = performance.now();
      if (res.stdout !== "1\n") {
        throw new Error(`unexpected output ${JSON.stringify(res.stdout)} (exit ${res.exitCode}, stderr ${JSON.stringify(res.stderr)})`);
      }
      await sb.close();
      process.stdout.write(JSON.stringify({ claimed_ms: claimed - t0, output_ms: done - t0 }) + "\n");
    }
  } finally {
    await client.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
