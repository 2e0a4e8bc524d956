// Latency and throughput of the SDK against a real kubox-agent on 127.0.0.1 (no router, no
// cluster): run() round trip, start() to first output, and a file streamed up and down. Run
// with `npm run bench` (after `npm run build`); it prints p50 and max of N runs after a warm-up.

import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";

import { Sandbox } from "../index.js";
import { LocalAgent } from "../test/agent.js";

const runs = Number(process.env.BENCH_RUNS ?? 20);
const fileMiB = Number(process.env.BENCH_FILE_MIB ?? 64);

function summary(name: string, ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const p50 = s[Math.floor((s.length - 1) / 2)] ?? 0;
  return `${name}: p50 ${p50.toFixed(2)} ms, max ${(s[s.length - 1] ?? 0).toFixed(2)} ms (n=${s.length})`;
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function main(): Promise<void> {
  const agent = await LocalAgent.start();
  try {
    const sb = Sandbox.attach(agent.url, agent.token, { name: "bench" });
    await sb.run(["true"]);
    const run: number[] = [];
    for (let i = 0; i < runs; i++) run.push(await timed(async () => void (await sb.run(["echo", "hi"]))));
    console.log(summary("run(['echo','hi']) round trip", run));

    const first: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      const proc = await sb.start(["echo", "hi"]);
      for await (const ev of proc) {
        if (ev.type === "output") {
          first.push(performance.now() - t);
          break;
        }
      }
      await proc.close();
    }
    console.log(summary("start(['echo','hi']) to first output", first));

    const data = randomBytes(fileMiB << 20);
    const parts = Array.from({ length: fileMiB }, (_, i) => data.subarray(i << 20, (i + 1) << 20));
    const up = await timed(() => sb.files.write("/bench.bin", Readable.from(parts)));
    let size = 0;
    const down = await timed(async () => {
      for await (const c of await sb.files.stream("/bench.bin")) size += c.length;
    });
    if (size !== data.length) throw new Error(`downloaded ${size} bytes of ${data.length}`);
    console.log(`write ${fileMiB} MiB streamed: ${((fileMiB * 1000) / up).toFixed(0)} MiB/s; stream it back: ${((fileMiB * 1000) / down).toFixed(0)} MiB/s`);
  } finally {
    await agent.stop();
  }
}

await main();
