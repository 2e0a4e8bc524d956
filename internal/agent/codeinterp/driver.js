// kubox-agent's JavaScript driver for the code interpreter (internal/agent/codeinterp): one
// long-lived Node.js per context. Each execution runs as a script in the same global context, so
// variables (var, let, const, functions) stay between executions; the script's completion value
// (the last expression's) is the result, awaited when it is a promise. Requests arrive as JSON
// lines on fd 3, the agent's stdin moved there by the shell that starts Node (fd 0 is /dev/null,
// so code that reads stdin reads nothing of the protocol); user output goes to stdout and stderr
// as is; results, errors and the end of each
// execution are frames on stdout (RS + nonce + JSON + LF), the end also a mark on stderr
// (RS + nonce + LF), the nonce being the first line the agent sends.
'use strict';
const net = require('node:net');
const vm = require('node:vm');
const util = require('node:util');
const RS = '\x1e';
let nonce = null;
let count = 0;
let pending = '';
let interrupt = null;
const queue = [];
let running = false;

globalThis.require = require;

// Output goes straight to the file descriptors, with no stream state in JavaScript: an interrupt
// (which ends the running JavaScript wherever it is, a stream's write too) cannot leave
// process.stdout waiting forever on a write it cut short.
const fs = require('node:fs');
const pause = new Int32Array(new SharedArrayBuffer(4));
function writeAll(fd, data) {
  for (let off = 0; off < data.length;) {
    try {
      off += fs.writeSync(fd, data, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(pause, 0, 0, 1); // the agent holds the output (flow control): wait, then retry
    }
  }
}
for (const [fd, stream] of [[1, process.stdout], [2, process.stderr]]) {
  stream.write = (chunk, encoding, cb) => {
    const enc = typeof encoding === 'string' ? encoding : 'utf8';
    writeAll(fd, typeof chunk === 'string' ? Buffer.from(chunk, enc) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    const done = typeof encoding === 'function' ? encoding : cb;
    if (done) process.nextTick(done);
    return true;
  };
}
process.on('SIGINT', () => {
  if (interrupt) interrupt(new Error('Interrupted: the execution was interrupted (SIGINT)'));
});

function frame(msg) {
  writeAll(1, Buffer.from(RS + nonce + JSON.stringify(msg) + '\n'));
}

function error(e) {
  if (e instanceof Error) {
    // The driver's own frames (and Node's) are not the user's: only the cell's stay.
    const tb = String(e.stack || '').split('\n').filter((l) => !/^\s+at .*(node:|\[eval\])/.test(l));
    frame({ type: 'error', name: e.name, value: e.message, traceback: tb.join('\n') });
  } else {
    frame({ type: 'error', name: 'Error', value: util.inspect(e), traceback: '' });
  }
}

async function execute(req) {
  count++;
  frame({ type: 'number_of_executions', execution_count: count });
  const saved = {};
  for (const [k, v] of Object.entries(req.env || {})) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  try {
    let value = vm.runInThisContext(req.code, { filename: '<cell>', breakOnSigint: true });
    if (value && typeof value.then === 'function') {
      value = await Promise.race([value, new Promise((_, reject) => { interrupt = reject; })]);
    }
    if (value !== undefined) {
      frame({ type: 'result', is_main_result: true, text: typeof value === 'string' ? value : util.inspect(value) });
    }
  } catch (e) {
    error(e);
  } finally {
    interrupt = null;
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  writeAll(2, Buffer.from(RS + nonce + '\n'));
  frame({ type: 'end' });
}

async function drain() {
  if (running) return;
  running = true;
  while (queue.length > 0) await execute(queue.shift());
  running = false;
}

const input = new net.Socket({ fd: 3, readable: true, writable: false });
input.setEncoding('utf8');
input.on('data', (chunk) => {
  pending += chunk;
  let i;
  while ((i = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, i);
    pending = pending.slice(i + 1);
    if (nonce === null) nonce = line.trim();
    else queue.push(JSON.parse(line));
  }
  drain();
});
input.on('end', () => process.exit(0));
