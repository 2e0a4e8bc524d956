// Processes through a real kubox-agent: run to completion, streamed output, stdin, signals,
// terminals, aborts.

import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";

import { APIError, CommandError, ConfigError, Sandbox, SandboxTimeoutError, type OutputEvent } from "../index.js";
import { LocalAgent } from "./agent.js";

describe("processes", () => {
  let agent: LocalAgent;
  let sb: Sandbox;
  before(async () => {
    agent = await LocalAgent.start();
    sb = Sandbox.attach(agent.url, agent.token, { name: "test-sandbox" });
  });
  after(async () => agent.stop());

  test("run returns the exit code and both streams, argv and shell alike", async () => {
    const argv = await sb.run(["sh", "-c", "echo out; echo err >&2; exit 3"]);
    assert.equal(argv.exitCode, 3);
    assert.equal(argv.stdout, "out\n");
    assert.equal(argv.stderr, "err\n");
    assert.deepEqual([...argv.stdoutBytes], [...new TextEncoder().encode("out\n")]);
    const shell = await sb.run("echo $GREETING from $(pwd) | tr a-z A-Z", { env: { GREETING: "hi" }, cwd: "/tmp" });
    assert.equal(shell.exitCode, 0);
    assert.equal(shell.stdout, "HI FROM /TMP\n");
  });

  test("run writes stdin and caps the output it returns", async () => {
    const res = await sb.run(["cat"], { stdin: "through stdin" });
    assert.equal(res.stdout, "through stdin");
    const big = await sb.run("head -c 5000 /dev/zero", { maxOutputBytes: 1000 });
    assert.equal(big.stdoutBytes.length, 1000);
    assert.equal(big.stdoutTruncated, true);
  });

  test("run with check throws CommandError with the result; timeoutMs stops", async () => {
    await assert.rejects(sb.run("echo boom >&2; exit 7", { check: true }), (e: unknown) => {
      assert.ok(e instanceof CommandError);
      assert.match(e.message, /sandbox test-sandbox exited with status 7: boom/);
      return true;
    });
    // The agent stops a timed-out process group with SIGTERM (SIGKILL only after its grace
    // period), which ends sleep.
    const res = await sb.run(["sleep", "30"], { timeoutMs: 200 });
    assert.equal(res.timedOut, true);
    assert.equal(res.signal, "SIGTERM");
    assert.equal(res.exitCode, 143);
  });

  test("start streams output in order through callbacks and iteration", async () => {
    const seen: string[] = [];
    const proc = await sb.start("for i in 1 2 3; do echo $i; echo e$i >&2; done", {
      onStdout: (ev: OutputEvent) => void seen.push("out:" + ev.text),
      onStderr: (ev: OutputEvent) => void seen.push("err:" + ev.text),
    });
    assert.ok(proc.id);
    assert.ok(proc.pid > 0);
    assert.equal(await proc.wait(), 0);
    assert.equal(seen.filter((s) => s.startsWith("out:")).map((s) => s.slice(4)).join(""), "1\n2\n3\n");
    assert.equal(seen.filter((s) => s.startsWith("err:")).map((s) => s.slice(4)).join(""), "e1\ne2\ne3\n");

    const iterated = await sb.start(["sh", "-c", "printf abc; exit 4"]);
    let text = "";
    let exit = -1;
    for await (const ev of iterated) {
      if (ev.type === "output") text += ev.text;
      if (ev.type === "exit") exit = ev.exitCode;
    }
    assert.equal(text, "abc");
    assert.equal(exit, 4);
    assert.equal(iterated.exit?.exitCode, 4);
  });

  test("stdin: sendInput and closeInput, and a stream copied in the background", async () => {
    let out = "";
    const cat = await sb.start(["cat"], { stdin: true, onStdout: (ev) => void (out += ev.text) });
    await cat.sendInput("line 1\n");
    await cat.sendInput(new TextEncoder().encode("line 2\n"));
    await cat.closeInput();
    assert.equal(await cat.wait(), 0);
    assert.equal(out, "line 1\nline 2\n");

    let counted = "";
    const wc = await sb.start(["wc", "-c"], { stdin: Readable.from([Buffer.alloc(100_000, 1), "tail"]), onStdout: (ev) => void (counted += ev.text) });
    assert.equal(await wc.wait(), 0);
    assert.equal(counted.trim(), "100004");
    assert.equal(wc.stdinError, undefined);
  });

  test("signal reaches the process group; kill ends it", async () => {
    const proc = await sb.start("trap 'echo got TERM; exit 42' TERM; echo ready; while true; do sleep 0.05; done", { });
    const it = proc[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(!first.done && first.value.type === "output" && first.value.text, "ready\n");
    await proc.signal("SIGTERM");
    let text = "";
    for (let r = await it.next(); !r.done; r = await it.next()) {
      if (r.value.type === "output") text += r.value.text;
    }
    assert.match(text, /got TERM\n/);
    assert.equal(proc.exit?.exitCode, 42);

    const sleeper = await sb.start(["sleep", "30"]);
    await sleeper.kill();
    assert.equal(await sleeper.wait(), 137);
    assert.equal(sleeper.exit?.signal, "SIGKILL");
  });

  test("a terminal: output as pty, resize seen by the process", async () => {
    let out = "";
    const proc = await sb.start("stty size; read line; stty size; echo got:$line", {
      tty: { rows: 24, cols: 80 },
      onStdout: (ev) => {
        assert.equal(ev.stream, "pty");
        out += ev.text;
      },
    });
    const it = proc[Symbol.asyncIterator]();
    while (!out.includes("24 80")) {
      const r = await it.next();
      assert.equal(r.done, false, `the terminal ended before printing its size: ${out}`);
    }
    await proc.resize(40, 120);
    await proc.sendInput("hello\n");
    for (let r = await it.next(); !r.done; r = await it.next());
    assert.equal(proc.exit?.exitCode, 0);
    assert.match(out, /40 120/);
    assert.match(out, /got:hello/);
  });

  test("resize without a terminal fails with 412 and the process's name", async () => {
    const proc = await sb.start(["sleep", "30"]);
    await assert.rejects(proc.resize(10, 10), (e: unknown) => {
      assert.ok(e instanceof APIError);
      assert.equal(e.status, 412);
      assert.equal(e.code, "failed_precondition");
      assert.match(e.message, new RegExp(`process ${proc.id} in sandbox test-sandbox`));
      return true;
    });
    await proc.kill();
    await proc.wait();
  });

  test("aborting start's signal kills the process; aborting run cancels it", async () => {
    const ac = new AbortController();
    const proc = await sb.start(["sleep", "30"], { signal: ac.signal });
    ac.abort();
    await assert.rejects(proc.wait(), SandboxTimeoutError);
    const gone = await sb.run(["sh", "-c", `kill -0 ${proc.pid} 2>/dev/null && echo alive || echo gone`]);
    // SIGKILL is sent when the abort fires; the agent reaps the group at once.
    for (let i = 0; gone.stdout !== "gone\n" && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 20));
      Object.assign(gone, await sb.run(["sh", "-c", `kill -0 ${proc.pid} 2>/dev/null && echo alive || echo gone`]));
    }
    assert.equal(gone.stdout, "gone\n");

    const runAbort = new AbortController();
    const running = sb.run(["sleep", "30"], { signal: runAbort.signal });
    setTimeout(() => runAbort.abort(), 50);
    await assert.rejects(running, SandboxTimeoutError);
  });

  test("close stops following; the process keeps running and can be signalled", async () => {
    const proc = await sb.start(["sleep", "30"]);
    await proc.close();
    const ps = await sb.run(["sh", "-c", `kill -0 ${proc.pid} && echo alive`]);
    assert.equal(ps.stdout, "alive\n");
    await proc.kill();
  });

  test("processes lists them; attachProcess follows one again from the start of its output", async () => {
    const proc = await sb.start(["sh", "-c", "echo one; read x; echo two"], { stdin: true, tag: "mine" });
    const listed = (await sb.processes()).find((p) => p.id === proc.id);
    assert.equal(listed?.tag, "mine");
    assert.equal(listed?.exit, undefined);
    await proc.close();
    let out = "";
    const again = await sb.attachProcess(proc.id, { onStdout: (ev) => void (out += ev.text) });
    assert.equal(again.pid, proc.pid);
    await again.sendInput("\n");
    assert.equal(await again.wait(), 0);
    assert.equal(out, "one\ntwo\n");
    const exited = (await sb.processes({ includeExited: true })).find((p) => p.id === proc.id);
    assert.equal(exited?.exit?.exitCode, 0);
    await assert.rejects(sb.attachProcess("no-such-process"), (e: unknown) => e instanceof APIError && e.status === 404 && /process no-such-process in sandbox test-sandbox/.test(e.message));
  });

  test("a bad command is a ConfigError; input after the exit names the process", async () => {
    await assert.rejects(sb.run([]), (e: unknown) => e instanceof ConfigError && /no program/.test(e.message));
    const proc = await sb.start(["true"]);
    assert.equal(await proc.wait(), 0);
    await assert.rejects(proc.sendInput("late"), (e: unknown) => {
      assert.ok(e instanceof APIError, String(e));
      assert.ok(e.status === 412 || e.status === 404, e.message);
      assert.match(e.message, new RegExp(`process ${proc.id} in sandbox test-sandbox`));
      return true;
    });
  });
});
