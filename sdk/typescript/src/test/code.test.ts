// runCode keeps a bounded Execution: code that prints without end cannot exhaust the caller's
// memory, while the callbacks still get every piece.

import assert from "node:assert/strict";
import { test } from "node:test";

import { type CodeResult, defaultCodeOutputBytes, defaultCodeResultBytes, type Execution, type Kept, message, type RunCodeOptions } from "../code.js";

function feed(msgs: Record<string, unknown>[], opts: RunCodeOptions = {}): Execution {
  const ex: Execution = { results: [], logs: { stdout: [], stderr: [] }, executionCount: 0, stdoutTruncated: false, stderrTruncated: false, resultsTruncated: false };
  const kept: Kept = { stdout: 0, stderr: 0, results: 0 };
  for (const m of [...msgs, { type: "end_of_execution" }]) {
    if (message(ex, kept, JSON.stringify(m), opts)) return ex;
  }
  throw new Error("no end_of_execution");
}

test("runCode keeps the first bytes of each stream and results within their bound; the callbacks get everything", () => {
  const piece = "é".repeat(100 << 10); // 200 KiB in UTF-8
  const pieces = Math.floor(defaultCodeOutputBytes / (2 * piece.length)) + 3;
  const png = "A".repeat(8 << 20);
  const images = Math.floor(defaultCodeResultBytes / png.length) + 2;
  const msgs: Record<string, unknown>[] = [];
  for (let i = 0; i < pieces; i++) msgs.push({ type: "stdout", text: piece }, { type: "stderr", text: "short\n" });
  for (let i = 0; i < images; i++) msgs.push({ type: "result", png });
  msgs.push({ type: "result", text: "42", is_main_result: true });
  const seen: string[] = [];
  const results: CodeResult[] = [];
  const ex = feed(msgs, { onStdout: (t) => seen.push(t), onResult: (r) => results.push(r) });

  const out = ex.logs.stdout.join("");
  const bytes = new TextEncoder().encode(out).length;
  assert.ok(ex.stdoutTruncated, "stdout past the bound is marked truncated");
  assert.ok(bytes <= defaultCodeOutputBytes && bytes >= defaultCodeOutputBytes - 1, `kept ${bytes} bytes of stdout`);
  assert.equal(out.replaceAll("é", ""), "", "cut inside a character");
  assert.ok(!ex.stderrTruncated);
  assert.equal(ex.logs.stderr.length, pieces);
  assert.equal(seen.length, pieces, "onStdout gets everything");
  assert.ok(seen.every((s) => s === piece));
  assert.equal(results.length, images + 1, "onResult gets everything");
  assert.ok(ex.resultsTruncated);
  assert.ok(ex.results.length <= Math.floor(defaultCodeResultBytes / png.length) + 1, `kept ${ex.results.length} results`);
  assert.equal(ex.text, "42");
});

test("a small execution is kept whole", () => {
  const ex = feed([{ type: "stdout", text: "hi\n" }, { type: "result", text: "1", is_main_result: true }]);
  assert.deepEqual(ex.logs.stdout, ["hi\n"]);
  assert.equal(ex.text, "1");
  assert.ok(!ex.stdoutTruncated && !ex.stderrTruncated && !ex.resultsTruncated);
});
