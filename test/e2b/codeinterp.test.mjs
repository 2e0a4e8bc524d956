// E2B's stock code-interpreter client (@e2b/code-interpreter, pinned in package-lock.json)
// against kubox: Sandbox.runCode and the context calls as an E2B program makes them. Two ways:
//
// - Straight at kubox-agent's code-interpreter port on 127.0.0.1 (internal/agent/codeinterp's
//   TestStockJSClient): the client reaches the port through the SDK's own sandboxUrl override.
//   It sends the access token on runCode only; kubox-router adds the agent token to every
//   request for the port, and this file does the same with a fetch wrapper, so the agent's token
//   check is exercised on every call.
//     KUBOX_CI_URL     the agent's code-interpreter base URL (http://127.0.0.1:<port>)
//     KUBOX_CI_TOKEN   the agent token
//     KUBOX_CI_ROOT    the agent's file root on this machine (for a gate file the test creates)
// - Through kubox-router (KUBOX_CI_ROUTER=1; test/integration/e2b's
//   TestStockCodeInterpreterThroughRouter): Sandbox.create on E2B's control API and
//   "49999-<id>.<domain>", the client unchanged and no fetch wrapper, with what an E2B user sets:
//     E2B_DOMAIN, E2B_API_KEY, KUBOX_E2B_TEMPLATE (an E2B template ID), and, for the test's TLS
//     terminator and wildcard DNS record, NODE_EXTRA_CA_CERTS and KUBOX_E2B_RESOLVE (resolve.mjs).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Sandbox, TimeoutError } from '@e2b/code-interpreter';

const throughRouter = process.env.KUBOX_CI_ROUTER === '1';
const url = process.env.KUBOX_CI_URL;
const token = process.env.KUBOX_CI_TOKEN;
const root = process.env.KUBOX_CI_ROOT;

const plainFetch = globalThis.fetch;
if (!throughRouter) {
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has('X-Access-Token')) headers.set('X-Access-Token', token);
    return plainFetch(input, { ...init, headers });
  };
}

describe('@e2b/code-interpreter against kubox-agent', () => {
  let sbx;
  // gateCtx opens the gates of the streaming test through the router, where this process sees
  // no file of the sandbox: a second context, which the sandbox runs beside the first.
  let gateCtx;

  before(async () => {
    if (throughRouter) {
      sbx = await Sandbox.create(process.env.KUBOX_E2B_TEMPLATE, { timeoutMs: 300_000 });
      gateCtx = await sbx.createCodeContext();
    } else {
      sbx = new Sandbox({ sandboxId: 'kubox-local', envdAccessToken: token, sandboxUrl: url });
    }
  });

  after(async () => {
    globalThis.fetch = plainFetch;
    if (throughRouter && sbx) await sbx.kill().catch(() => {});
  });

  // gatePath is where the code under test waits for a gate file; openGate creates it.
  const gatePath = (name) => (throughRouter ? name : join(root, name));
  let opening;
  const openGate = (name) => {
    if (!throughRouter) {
      if (!existsSync(gatePath(name))) writeFileSync(gatePath(name), '');
      return;
    }
    opening ??= sbx.runCode(`open(${JSON.stringify(name)}, 'w').close()`, { context: gateCtx });
  };

  it('keeps state across runCode calls: x = 41, then x + 1 is 42', async () => {
    await sbx.runCode('x = 41');
    const exec = await sbx.runCode('x + 1');
    assert.equal(exec.text, '42');
    assert.equal(exec.error, undefined);
    assert.ok(exec.executionCount >= 2);
  });

  it('streams stdout as it is printed', async () => {
    const gate = gatePath('gate-js');
    const seen = [];
    const exec = await sbx.runCode(
      `import os, time\nprint('first', flush=True)\nwhile not os.path.exists(${JSON.stringify(gate)}):\n    time.sleep(0.01)\nprint('second')`,
      {
        onStdout: (m) => {
          seen.push(m.line);
          // The code waits for this file: "first" reached the client while the code ran.
          if (seen.join('').includes('first\n')) openGate('gate-js');
        },
      },
    );
    if (opening) assert.equal((await opening).error, undefined);
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
