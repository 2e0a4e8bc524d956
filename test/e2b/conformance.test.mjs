// Conformance of kubox with E2B's stock JavaScript SDK (the `e2b` package pinned in
// package-lock.json): every test drives the SDK as an E2B program would, against kubox-router's
// E2B control API and kubox-agent's envd port, with nothing changed but E2B_DOMAIN and
// E2B_API_KEY. test/e2e/e2b_test.go runs it against the real node; docs/e2b.md lists the results.
//
// Environment (set by the Go test):
//   E2B_DOMAIN, E2B_API_KEY   what an E2B user sets
//   KUBOX_E2B_TEMPLATE        an E2B template ID that is a SandboxWarmPool of the namespace
//   NODE_EXTRA_CA_CERTS       the CA of the test's TLS terminator
//   KUBOX_E2B_RESOLVE         the domain whose names resolve.mjs sends to 127.0.0.1
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  AuthenticationError,
  CommandExitError,
  FilesystemEventType,
  NotFoundError,
  Sandbox,
  SandboxError,
} from 'e2b';

const template = process.env.KUBOX_E2B_TEMPLATE;
const timeoutMs = 300_000;

// eventually retries check until it passes or 30 s have gone by: for what kubox does in the
// background (a watch event, a process reaped).
async function eventually(what, check) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${err.message}`, { cause: err });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

// waitFor retries check until it passes or ms have gone by: for what the controller does on its
// own time (an idle policy's suspend).
async function waitFor(what, ms, check) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${err.message}`, { cause: err });
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// startCounter starts a process in s that writes a count going up every 200 ms to /tmp/count,
// detached from the command (its output goes nowhere, so the command's stream ends: an open
// stream would keep an idle sandbox awake).
async function startCounter(s) {
  await s.commands.run(
    "nohup sh -c 'i=0; while true; do i=$((i+1)); echo $i > /tmp/count.new && mv /tmp/count.new /tmp/count; sleep 0.2; done' >/dev/null 2>&1 &",
  );
  await eventually('the counter to start', async () => assert.ok((await count(s)) > 0));
}

async function count(s) {
  return Number((await s.files.read('/tmp/count')).trim());
}

// counting reports whether the counter of s goes on (its process runs) and is at least from.
async function counting(s, from) {
  const a = await count(s);
  await sleep(1500);
  const b = await count(s);
  return a >= from && b > a;
}

describe('E2B SDK against kubox', () => {
  let sbx;

  before(async () => {
    sbx = await Sandbox.create(template, {
      timeoutMs,
      metadata: { suite: 'conformance', owner: 'kubox' },
      envs: { KUBOX_E2B_GREETING: 'hello-from-create' },
    });
  });

  after(async () => {
    if (sbx) await sbx.kill().catch(() => {});
  });

  describe('Sandbox', () => {
    it('create answers a sandbox with an ID and envd access', async () => {
      assert.match(sbx.sandboxId, /^e2b-[a-z0-9]+$/);
      assert.equal(await sbx.isRunning(), true);
    });

    it('getInfo reports the template, metadata and state', async () => {
      const info = await sbx.getInfo();
      assert.equal(info.sandboxId, sbx.sandboxId);
      assert.equal(info.templateId, template);
      assert.equal(info.state, 'running');
      assert.deepEqual(info.metadata, { suite: 'conformance', owner: 'kubox' });
      assert.ok(info.endAt > info.startedAt, `endAt ${info.endAt} after startedAt ${info.startedAt}`);
    });

    it('setTimeout moves endAt', async () => {
      const before = (await sbx.getInfo()).endAt;
      await sbx.setTimeout(timeoutMs * 2);
      const later = (await sbx.getInfo()).endAt;
      assert.ok(later.getTime() - before.getTime() > timeoutMs / 2, `endAt ${before} → ${later}`);
    });

    it('Sandbox.list finds it, filtered by metadata', async () => {
      const paginator = Sandbox.list({ query: { metadata: { suite: 'conformance' } } });
      const items = await paginator.nextItems();
      assert.ok(items.some((s) => s.sandboxId === sbx.sandboxId), `list: ${JSON.stringify(items)}`);
      const none = await Sandbox.list({ query: { metadata: { suite: 'no-such-suite' } } }).nextItems();
      assert.equal(none.length, 0);
    });

    it('Sandbox.list pages with limit, filters by template, orders by start time', async () => {
      const second = await Sandbox.create(template, { timeoutMs, metadata: { suite: 'conformance' } });
      try {
        const paginator = Sandbox.list({ limit: 1, order: 'asc', query: { metadata: { suite: 'conformance' }, template } });
        const seen = [];
        while (paginator.hasNext) {
          const items = await paginator.nextItems();
          assert.ok(items.length <= 1, `a page of ${items.length} with limit 1`);
          seen.push(...items);
        }
        assert.deepEqual(seen.map((s) => s.sandboxId).sort(), [sbx.sandboxId, second.sandboxId].sort());
        assert.ok(seen[0].startedAt <= seen[1].startedAt, `asc order: ${seen.map((s) => s.startedAt.toISOString())}`);
        const other = await Sandbox.list({ query: { template: 'no-such-template-kubox' } }).nextItems();
        assert.equal(other.length, 0);
      } finally {
        await second.kill();
      }
    });

    it('Sandbox.connect reconnects by ID', async () => {
      const again = await Sandbox.connect(sbx.sandboxId);
      const r = await again.commands.run('echo reconnected');
      assert.equal(r.stdout, 'reconnected\n');
    });

    it('envs given to create reach commands', async () => {
      const r = await sbx.commands.run('echo $KUBOX_E2B_GREETING');
      assert.equal(r.stdout, 'hello-from-create\n');
    });
  });

  describe('commands', () => {
    it('run returns stdout, stderr and exit code 0', async () => {
      const r = await sbx.commands.run('echo out; echo err >&2');
      assert.equal(r.exitCode, 0);
      assert.equal(r.stdout, 'out\n');
      assert.equal(r.stderr, 'err\n');
    });

    it('a non-zero exit is a CommandExitError with the output', async () => {
      await assert.rejects(sbx.commands.run('echo partial; exit 3'), (err) => {
        assert.ok(err instanceof CommandExitError, `${err}`);
        assert.equal(err.exitCode, 3);
        assert.equal(err.stdout, 'partial\n');
        return true;
      });
    });

    it('streams output to onStdout/onStderr as it is written', async () => {
      const out = [];
      const err = [];
      const r = await sbx.commands.run('for i in 1 2 3; do echo line$i; sleep 0.2; done; echo done >&2', {
        onStdout: (d) => out.push(d),
        onStderr: (d) => err.push(d),
      });
      assert.equal(out.join(''), 'line1\nline2\nline3\n');
      assert.ok(out.length >= 2, `output came in ${out.length} chunk(s), want it streamed`);
      assert.equal(err.join(''), 'done\n');
      assert.equal(r.stdout, 'line1\nline2\nline3\n');
    });

    it('cwd and per-command envs', async () => {
      const r = await sbx.commands.run('pwd; echo $ONE', { cwd: '/tmp', envs: { ONE: 'uno' } });
      assert.equal(r.stdout, '/tmp\nuno\n');
    });

    it('background commands are listed, take stdin and can be killed', async () => {
      const h = await sbx.commands.run('cat', { background: true, stdin: true });
      assert.ok(h.pid > 0);
      const procs = await sbx.commands.list();
      assert.ok(procs.some((p) => p.pid === h.pid), `list: ${JSON.stringify(procs)}`);
      await sbx.commands.sendStdin(h.pid, 'echoed back\n');
      await eventually('stdin echoed', () => assert.equal(h.stdout, 'echoed back\n'));
      assert.equal(await sbx.commands.kill(h.pid), true);
      await assert.rejects(h.wait(), CommandExitError);
      await eventually('killed process gone from list', async () => {
        const left = await sbx.commands.list();
        assert.ok(!left.some((p) => p.pid === h.pid));
      });
    });

    it('closeStdin ends a reader', async () => {
      const h = await sbx.commands.run('wc -c', { background: true, stdin: true });
      await sbx.commands.sendStdin(h.pid, 'abcd');
      await sbx.commands.closeStdin(h.pid);
      const r = await h.wait();
      assert.equal(r.stdout.trim(), '4');
    });

    it('connect attaches to a running command', async () => {
      const h = await sbx.commands.run('sleep 1; echo late', { background: true });
      const attached = await sbx.commands.connect(h.pid);
      const r = await attached.wait();
      assert.equal(r.stdout, 'late\n');
    });

    it('a command timeout kills it', async () => {
      await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1000 }), (err) => {
        assert.ok(err instanceof SandboxError || err instanceof CommandExitError, `${err}`);
        return true;
      });
    });
  });

  describe('files', () => {
    const dir = `/tmp/e2b-conformance-${process.pid}`;

    it('write and read text and bytes', async () => {
      const info = await sbx.files.write(`${dir}/hello.txt`, 'hello, e2b\n');
      assert.equal(info.path, `${dir}/hello.txt`);
      assert.equal(await sbx.files.read(`${dir}/hello.txt`), 'hello, e2b\n');
      const bytes = new Uint8Array(256 * 1024).map((_, i) => i % 251);
      await sbx.files.write(`${dir}/blob.bin`, bytes.buffer);
      const back = await sbx.files.read(`${dir}/blob.bin`, { format: 'bytes' });
      assert.deepEqual(Buffer.from(back), Buffer.from(bytes));
      await sbx.files.write(`${dir}/zipped.txt`, 'sent gzip-encoded', { gzip: true });
      assert.equal(await sbx.files.read(`${dir}/zipped.txt`), 'sent gzip-encoded');
    });

    it('write several files at once', async () => {
      await sbx.files.write([
        { path: `${dir}/multi/a.txt`, data: 'a' },
        { path: `${dir}/multi/b.txt`, data: 'b' },
      ]);
      assert.equal(await sbx.files.read(`${dir}/multi/b.txt`), 'b');
    });

    it('list, exists, getInfo, makeDir, rename, remove', async () => {
      assert.equal(await sbx.files.makeDir(`${dir}/sub`), true);
      assert.equal(await sbx.files.makeDir(`${dir}/sub`), false);
      const names = (await sbx.files.list(dir)).map((e) => e.name).sort();
      assert.deepEqual(names, ['blob.bin', 'hello.txt', 'multi', 'sub', 'zipped.txt']);
      const st = await sbx.files.getInfo(`${dir}/hello.txt`);
      assert.equal(st.type, 'file');
      assert.equal(st.size, 11);
      const moved = await sbx.files.rename(`${dir}/hello.txt`, `${dir}/sub/hello.txt`);
      assert.equal(moved.path, `${dir}/sub/hello.txt`);
      assert.equal(await sbx.files.exists(`${dir}/hello.txt`), false);
      await sbx.files.remove(`${dir}/sub`);
      assert.equal(await sbx.files.exists(`${dir}/sub/hello.txt`), false);
    });

    it('watchDir with includeEntry and recursive', async () => {
      await sbx.files.makeDir(`${dir}/deep/er`);
      const events = [];
      const handle = await sbx.files.watchDir(`${dir}/deep`, (e) => events.push(e), { recursive: true, includeEntry: true });
      try {
        await sbx.files.write(`${dir}/deep/er/leaf.txt`, 'leaf');
        await eventually('create event with its entry', () => {
          const ev = events.find((e) => e.type === FilesystemEventType.CREATE && e.name === 'er/leaf.txt');
          assert.ok(ev, `events: ${JSON.stringify(events.map((e) => [e.type, e.name]))}`);
          assert.equal(ev.entry?.path, `${dir}/deep/er/leaf.txt`);
        });
      } finally {
        await handle.stop();
      }
    });

    it('a write with file metadata is refused with the reason, nothing written', async () => {
      await assert.rejects(sbx.files.write(`${dir}/meta.txt`, 'm', { metadata: { owner: 'alice' } }), (err) => {
        assert.match(err.message, /metadata/i);
        return true;
      });
      assert.equal(await sbx.files.exists(`${dir}/meta.txt`), false);
    });

    it('reading a missing file is a NotFoundError', async () => {
      await assert.rejects(sbx.files.read(`${dir}/nope.txt`), NotFoundError);
    });

    it('watchDir reports a file written', async () => {
      await sbx.files.makeDir(`${dir}/watched`);
      const events = [];
      const handle = await sbx.files.watchDir(`${dir}/watched`, (e) => events.push(e));
      try {
        await sbx.files.write(`${dir}/watched/new.txt`, 'x');
        await sbx.commands.run(`rm ${dir}/watched/new.txt`);
        await eventually('create and remove events', () => {
          const seen = events.map((e) => `${e.type}:${e.name}`);
          assert.ok(seen.includes(`${FilesystemEventType.CREATE}:new.txt`), `events: ${seen}`);
          assert.ok(seen.includes(`${FilesystemEventType.REMOVE}:new.txt`), `events: ${seen}`);
        });
      } finally {
        await handle.stop();
      }
    });
  });

  describe('pty', () => {
    it('create, sendInput, resize and kill a terminal', async () => {
      const chunks = [];
      const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => chunks.push(Buffer.from(d)) });
      const text = () => Buffer.concat(chunks).toString();
      await sbx.pty.sendInput(term.pid, new TextEncoder().encode('echo pty-$((6*7))\n'));
      await eventually('terminal output', () => assert.match(text(), /pty-42/));
      await sbx.pty.resize(term.pid, { cols: 120, rows: 40 });
      await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size\n'));
      await eventually('resized terminal', () => assert.match(text(), /40 120/));
      assert.equal(await sbx.pty.kill(term.pid), true);
    });
  });

  describe('errors', () => {
    it('a bad API key is an AuthenticationError', async () => {
      const bad = 'e2b_' + Buffer.from('not-a-kubernetes-token').toString('hex');
      await assert.rejects(Sandbox.create(template, { apiKey: bad }), AuthenticationError);
    });

    it('an unknown template is refused with its name', async () => {
      await assert.rejects(Sandbox.create('no-such-template-kubox'), (err) => {
        assert.ok(err instanceof SandboxError || err instanceof NotFoundError, `${err}`);
        assert.match(err.message, /no-such-template-kubox/);
        return true;
      });
    });
  });

  describe('pause, fork, snapshots and the timeout pause (gVisor, kubox-node)', () => {
    it('pause keeps a file in /tmp and a running process; connect resumes them', async (t) => {
      const s = await Sandbox.create(template, { timeoutMs });
      try {
        await s.files.write('/tmp/kept.txt', 'kept');
        await startCounter(s);
        const before = await count(s);
        let start = Date.now();
        assert.equal(await s.pause(), true);
        t.diagnostic(`pause (memory): ${Date.now() - start} ms`);
        assert.equal((await s.getInfo()).state, 'paused');
        start = Date.now();
        const resumed = await Sandbox.connect(s.sandboxId, { timeoutMs });
        t.diagnostic(`connect of the paused sandbox: ${Date.now() - start} ms`);
        assert.equal(await resumed.files.read('/tmp/kept.txt'), 'kept');
        assert.ok(await counting(resumed, before), 'the counter goes on from where it was');
      } finally {
        await s.kill().catch(() => {});
      }
    });

    it('fork of 3 continues from the same state', async (t) => {
      const src = await Sandbox.create(template, { timeoutMs });
      const forks = [];
      try {
        await src.files.write('/tmp/state.txt', 'before the fork');
        await startCounter(src);
        const before = await count(src);
        const start = Date.now();
        forks.push(...(await src.fork({ count: 3, timeoutMs })));
        t.diagnostic(`fork of 3: ${Date.now() - start} ms`);
        assert.equal(forks.length, 3);
        const ids = new Set([src.sandboxId]);
        for (const f of forks) {
          assert.ok(f instanceof Sandbox, `a fork failed: ${f}`);
          ids.add(f.sandboxId);
          assert.equal(await f.files.read('/tmp/state.txt'), 'before the fork');
          assert.ok(await counting(f, before), 'the fork counts on from the source\'s count');
        }
        assert.equal(ids.size, 4, 'every fork is a sandbox of its own');
        await forks[0].files.write('/tmp/state.txt', 'fork 0');
        assert.equal(await forks[1].files.read('/tmp/state.txt'), 'before the fork');
        assert.equal(await src.files.read('/tmp/state.txt'), 'before the fork');
        assert.ok(await counting(src, before), 'the source runs on');
      } finally {
        for (const f of forks) if (f instanceof Sandbox) await f.kill().catch(() => {});
        await src.kill().catch(() => {});
        for (const snap of await Sandbox.listSnapshots({ sandboxId: src.sandboxId }).nextItems().catch(() => [])) {
          await Sandbox.deleteSnapshot(snap.snapshotId).catch(() => {});
        }
      }
    });

    it('createSnapshot, Sandbox.create from it, listSnapshots and deleteSnapshot', async () => {
      const src = await Sandbox.create(template, { timeoutMs });
      let snap;
      let copy;
      try {
        await src.files.write('/tmp/snap.txt', 'in the snapshot');
        snap = await src.createSnapshot();
        assert.ok(snap.snapshotId);
        assert.equal(await src.files.read('/tmp/snap.txt'), 'in the snapshot', 'the source runs on');
        const listed = await Sandbox.listSnapshots({ sandboxId: src.sandboxId }).nextItems();
        assert.ok(listed.some((x) => x.snapshotId === snap.snapshotId), `listSnapshots: ${JSON.stringify(listed)}`);
        copy = await Sandbox.create(snap.snapshotId, { timeoutMs });
        assert.notEqual(copy.sandboxId, src.sandboxId);
        assert.equal(await copy.files.read('/tmp/snap.txt'), 'in the snapshot');
        await copy.kill();
        copy = undefined;
        assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
        assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false);
        snap = undefined;
      } finally {
        if (copy) await copy.kill().catch(() => {});
        await src.kill().catch(() => {});
        if (snap) await Sandbox.deleteSnapshot(snap.snapshotId).catch(() => {});
      }
    });
  });

  // Known gaps on the real node (docs/e2b.md, "What is missing"), run with KUBOX_E2B_KNOWN_GAPS=1
  // until they pass: a Filesystem pause loses /tmp (gVisor's own tmpfs there is not in the
  // root-filesystem snapshot), and a request to a sandbox the timeout paused got no answer
  // within 180 s.
  const knownGaps = process.env.KUBOX_E2B_KNOWN_GAPS === '1';
  if (knownGaps) {
    describe('known gaps', () => {
      it('pause({keepMemory: false}) keeps the file; the process does not survive', async () => {
        const s = await Sandbox.create(template, { timeoutMs });
        try {
          await s.files.write('/tmp/kept.txt', 'kept');
          await startCounter(s);
          assert.equal(await s.pause({ keepMemory: false }), true);
          const resumed = await Sandbox.connect(s.sandboxId, { timeoutMs });
          assert.equal(await resumed.files.read('/tmp/kept.txt'), 'kept');
          assert.ok((await count(resumed)) > 0, 'the counter file is kept');
          assert.equal(await counting(resumed, 0), false, 'the counter process restarted with the sandbox, not from memory');
        } finally {
          await s.kill().catch(() => {});
        }
      });

      it('lifecycle onTimeout pause: the timeout pauses the sandbox, a request resumes it', async (t) => {
        const s = await Sandbox.create(template, { timeoutMs: 30_000, lifecycle: { onTimeout: 'pause', autoResume: true } });
        try {
          const info = await s.getInfo();
          assert.deepEqual(info.lifecycle, { onTimeout: 'pause', autoResume: true });
          await s.files.write('/tmp/auto.txt', 'kept');
          await startCounter(s);
          const before = await count(s);
          const start = Date.now();
          await waitFor('the timeout to pause the sandbox', 240_000, async () => assert.equal((await s.getInfo()).state, 'paused'));
          t.diagnostic(`paused ${Date.now() - start} ms after the last request (timeout 30 s)`);
          const req = Date.now();
          // The request waits while the router resumes the sandbox (from its memory, on its node).
          assert.equal(await s.files.read('/tmp/auto.txt', { requestTimeoutMs: 180_000 }), 'kept');
          t.diagnostic(`a request to the auto-paused sandbox answered in ${Date.now() - req} ms`);
          assert.equal((await s.getInfo()).state, 'running');
          assert.ok(await counting(s, before), 'the counter goes on from where it was');
        } finally {
          await s.kill().catch(() => {});
        }
      });
    });
  }

  describe('pause and kill', () => {
    it('pause and connect resume a sandbox, files on volumes kept', async () => {
      const other = await Sandbox.create(template, { timeoutMs });
      try {
        await other.files.write('/workspace/kept.txt', 'kept');
        assert.equal(await other.pause(), true);
        assert.equal((await other.getInfo()).state, 'paused');
        const resumed = await Sandbox.connect(other.sandboxId, { timeoutMs });
        assert.equal(await resumed.files.read('/workspace/kept.txt'), 'kept');
      } finally {
        await other.kill().catch(() => {});
      }
    });

    it('kill ends the sandbox: its API and envd refuse it afterwards', async () => {
      const doomed = await Sandbox.create(template, { timeoutMs });
      assert.equal(await doomed.kill(), true);
      await assert.rejects(Sandbox.getInfo(doomed.sandboxId), NotFoundError);
      await assert.rejects(doomed.commands.run('echo still here'));
      assert.equal(await Sandbox.kill(doomed.sandboxId), false);
    });
  });
});
