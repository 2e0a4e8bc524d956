// E2B's stock code-interpreter client (@e2b/code-interpreter, pinned in package-lock.json)
// against kubox-agent's code-interpreter port on 127.0.0.1: Sandbox.runCode and the context
// calls as an E2B program makes them. internal/agent/codeinterp's TestStockJSClient starts the
// agent and runs this file (node --test); docs/e2b.md lists the results.
//
// Environment (set by the Go test):
//   KUBOX_CI_URL     the agent's code-interpreter base URL (http://127.0.0.1:<port>)
//   KUBOX_CI_TOKEN   the agent token, which kubox-router puts on every request it forwards
//   KUBOX_CI_ROOT    the agent's file root on this machine (for a gate file the test creates)
//
// The client reaches the port through the SDK's own sandboxUrl override (E2B_SANDBOX_URL in
// production is the router's "49999-<id>.<domain>"). It sends the access token on runCode only;
// kubox-router adds it to every request for the port, and this file does the same with a fetch
// wrapper, so the agent's token check is exercised on every call.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Sandbox, TimeoutError } from '@e2b/code-interpreter';

const url = process.env.KUBOX_CI_URL;
const token = process.env.KUBOX_CI_TOKEN;
const root = process.env.KUBOX_CI_ROOT;

const plainFetch = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers);
  if (!headers.has('X-Access-Token')) headers.set('X-Access-Token', token);
  return plainFetch(input, { ...init, headers });
};

describe('@e2b/code-interpreter against kubox-agent', () => {
  let sbx;

  before(() => {
    sbx = new Sandbox({ sandboxId: 'kubox-local', envdAccessToken: token, sandboxUrl: url });
  });

  after(() => {
    globalThis.fetch = plainFetch;
  });

  it('keeps state across runCode calls: x = 41, then x + 1 is 42', async () => {
    await sbx.runCode('x = 41');
    const exec = await sbx.runCode('x + 1');
    assert.equal(exec.text, '42');
    assert.equal(exec.error, undefined);
    assert.ok(exec.executionCount >= 2);
  });

  it('streams stdout as it is printed', async () => {
    const gate = join(root, 'gate-js');
    const seen = [];
    const exec = await sbx.runCode(
      `import os, time\nprint('first', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}):\n    time.sleep(0.01)\nprint('second')`,
      {
        onStdout: (m) => {
          seen.push(m.line);
          // The code waits for this file: "first" reached the client while the code ran.
          if (seen.join('').includes('first\n') && !existsSync(gate)) writeFileSync(gate, '');
        },
      },
    );
    assert.equal(exec.logs.stdout.join(''), 'first\nsecond\n');
    assert.ok(seen.length >= 2, `stdout came in ${seen.length} message(s)`);
  });

  it('returns an error with its name, value and traceback', async () => {
    const exec = await sbx.runCode('def f():\n    return 1 / 0\nf()');
    assert.equal(exec.error.name, 'ZeroDivisionError');
    assert.equal(exec.error.value, 'division by zero');
    assert.match(exec.error.traceback, /return 1 \/ 0/);
  });

  it('returns a matplotlib figure as a PNG', async () => {
    const exec = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()');
    assert.equal(exec.error, undefined, exec.error && exec.error.traceback);
    const png = exec.results.find((r) => r.png);
    assert.ok(png, `no PNG among ${JSON.stringify(exec.results.map((r) => r.formats()))}`);
    assert.deepEqual([...Buffer.from(png.png, 'base64').subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  });

  it('returns rich results: HTML and Markdown beside text', async () => {
    const exec = await sbx.runCode(
      'class T:\n    def _repr_html_(self): return "<i>t</i>"\n    def _repr_markdown_(self): return "*t*"\n    def __repr__(self): return "T"\nT()',
    );
    const r = exec.results[0];
    assert.deepEqual([r.text, r.html, r.markdown, r.isMainResult], ['T', '<i>t</i>', '*t*', true]);
  });

  it('creates, lists, restarts and removes contexts', async () => {
    const ctx = await sbx.createCodeContext({ language: 'python' });
    assert.equal(ctx.language, 'python');
    await sbx.runCode('y = 1', { context: ctx });
    assert.equal((await sbx.runCode('y', { context: ctx })).text, '1');
    assert.equal((await sbx.runCode('"y" in dir()')).text, 'False', 'the default context shares no state');
    assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
    await sbx.restartCodeContext(ctx);
    assert.equal((await sbx.runCode('y', { context: ctx })).error.name, 'NameError');
    await sbx.removeCodeContext(ctx);
    assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
  });

  it('interrupts a running loop at the timeout and keeps the context', async () => {
    const ctx = await sbx.createCodeContext();
    await sbx.runCode('kept = "yes"', { context: ctx });
    await assert.rejects(sbx.runCode('while True:\n    pass', { context: ctx, timeoutMs: 1000 }), TimeoutError);
    assert.equal((await sbx.runCode('kept', { context: ctx })).text, 'yes');
  });

  it('runs JavaScript and bash with their own state', async () => {
    await sbx.runCode('var n = 41', { language: 'js' });
    assert.equal((await sbx.runCode('n + 1', { language: 'javascript' })).text, '42');
    const ctx = await sbx.createCodeContext({ language: 'bash' });
    await sbx.runCode('N=41', { context: ctx });
    assert.equal((await sbx.runCode('echo $((N + 1))', { context: ctx })).logs.stdout.join(''), '42\n');
  });

  it('sets envs for one execution only', async () => {
    assert.equal((await sbx.runCode('import os\nos.environ.get("KUBOX_E")', { envs: { KUBOX_E: 'on' } })).text, 'on');
    assert.equal((await sbx.runCode('os.environ.get("KUBOX_E", "off")')).text, 'off');
  });
});
