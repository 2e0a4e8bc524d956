// The test's wildcard DNS record: names under KUBOX_E2B_RESOLVE resolve to 127.0.0.1, where the
// test's TLS terminator listens, as "*.e2b.example.com" resolves to an ingress in production.
// Loaded with `node --import` before the SDK; every other name resolves as usual.
import dns from 'node:dns';

const domain = (process.env.KUBOX_E2B_RESOLVE || '').toLowerCase();
const lookup = dns.lookup;

dns.lookup = function (host, options, callback) {
  if (typeof options === 'function') {
    callback = options;
    options = {};
  }
  const name = String(host).toLowerCase();
  if (domain && (name === domain || name.endsWith(`.${domain}`))) {
    const all = typeof options === 'object' && options !== null && options.all;
    if (all) return process.nextTick(callback, null, [{ address: '127.0.0.1', family: 4 }]);
    return process.nextTick(callback, null, '127.0.0.1', 4);
  }
  return lookup.call(this, host, options, callback);
};
