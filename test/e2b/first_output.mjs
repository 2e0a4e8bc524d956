// Time from Sandbox.create() to the first output of commands.run() through E2B's stock SDK, one
// measurement per line read from stdin (the caller waits for the warm pool to be full before
// each), printed as a JSON line {"created_ms": ..., "output_ms": ...}; the sandbox is killed
// after each (not timed). test/e2e's BenchmarkKuboxRun/e2b-sdk drives it with the environment
// conformance.test.mjs describes.
import { createInterface } from 'node:readline';
import { Sandbox } from 'e2b';

const template = process.env.KUBOX_E2B_TEMPLATE;

for await (const line of createInterface({ input: process.stdin })) {
  void line;
  const t0 = performance.now();
  const sbx = await Sandbox.create(template);
  const created = performance.now();
  let first = 0;
  const r = await sbx.commands.run("python3 -c 'print(1)'", {
    onStdout: () => {
      first ||= performance.now();
    },
  });
  if (r.stdout !== '1\n') throw new Error(`unexpected output ${JSON.stringify(r.stdout)} (exit ${r.exitCode})`);
  await sbx.kill();
  process.stdout.write(JSON.stringify({ created_ms: created - t0, output_ms: first - t0 }) + '\n');
}
