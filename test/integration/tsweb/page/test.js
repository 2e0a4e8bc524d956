// What a page holding a claim token does with @kubox/sdk/web; the Go test reads #result.
// The hash holds the router (with CORS for this origin), one without it, the namespace, the
// claim and its token.
import { Sandbox } from "./sdk.js";

const p = new URLSearchParams(location.hash.slice(1));
const opts = { routerURL: p.get("router"), token: p.get("token"), namespace: p.get("ns") };

async function errorOf(f) {
  try {
    await f();
    return null;
  } catch (e) {
    return { name: e.name, status: e.status ?? null, message: String(e.message) };
  }
}

async function main() {
  const sb = Sandbox.claimToken(p.get("claim"), opts);
  const out = {};
  out.run = (await sb.run(["sh", "-c", "echo web-$((6*7))"])).stdout;
  const chunks = [];
  const proc = await sb.start(["sh", "-c", "echo one; sleep 0.3; echo two"], { onStdout: (ev) => void chunks.push(ev.text) });
  out.exit = await proc.wait();
  out.chunks = chunks;
  await sb.files.write("/web.txt", "from the browser");
  out.read = await sb.files.readText("/web.txt");
  out.size = (await sb.files.stat("/web.txt")).size;
  out.list = (await sb.files.list("/")).map((f) => f.name);
  out.other = await errorOf(() => Sandbox.claimToken("someone-elses", opts).run(["true"]));
  out.noCORS = await errorOf(() => Sandbox.claimToken(p.get("claim"), { ...opts, routerURL: p.get("plain") }).run(["true"]));
  out.download = await errorOf(() => sb.files.download("/web.txt", "web.txt"));
  return out;
}

function report(o) {
  const pre = document.getElementById("result");
  pre.textContent = JSON.stringify(o);
  pre.dataset.done = "1";
}

main().then(report, (e) => report({ fatal: String((e && e.stack) || e) }));
