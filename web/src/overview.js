// A namespace's overview: pools, claims and sandboxes, refreshed every few seconds, and the
// pictures (claim latency and ready warm sandboxes per template, from the controller's metrics,
// which the router scrapes and keeps for an hour).
import { call } from "./api.js";
import { h, ago, badge, table, errorBox, until } from "./dom.js";
import { lineChart } from "./charts.js";

const REFRESH_MS = 3000;

export function renderOverview(main, ns, viewer) {
  const nsInput = h("input", { id: "namespace", value: ns, size: 20, disabled: viewer.fixedNamespace });
  const body = h("div", { id: "overview" });
  main.replaceChildren(
    h("div", { class: "toolbar" },
      h("form", { onsubmit: (e) => {
        e.preventDefault();
        location.hash = `#/ns/${encodeURIComponent(nsInput.value.trim())}`;
      } }, h("label", {}, "Namespace ", nsInput))),
    body);
  let stopped = false;
  let timer;
  const load = async () => {
    try {
      const path = `namespaces/${encodeURIComponent(ns)}`;
      const [o, m] = await Promise.all([call("GET", `${path}/overview`), call("GET", `${path}/metrics`).catch(() => null)]);
      if (stopped) return;
      body.replaceChildren(...view(ns, o, m));
    } catch (err) {
      if (!stopped) body.replaceChildren(errorBox(err));
    }
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  };
  load();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

function view(ns, o, m) {
  const link = (name) => h("a", { href: `#/sandbox/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` }, name);
  const out = [];
  for (const d of o.denied ?? []) out.push(h("div", { class: "note" }, d));
  out.push(h("section", {}, h("h2", {}, "Warm pools"), table(
    ["Pool", "Template", "Ready", "Refill", ""],
    o.pools.map((p) => h("tr", {},
      h("td", {}, p.name), h("td", {}, p.template),
      h("td", {}, `${p.ready} / ${p.wanted}`, p.total !== p.wanted ? h("span", { class: "muted" }, ` (${p.total} members)`) : ""),
      h("td", {}, h("progress", { max: Math.max(p.wanted, 1), value: Math.min(p.ready, p.wanted) })),
      h("td", { class: "muted small" }, p.progress ?? ""))),
    "No warm pools.")));
  out.push(h("section", {}, h("h2", {}, "Claims"), table(
    ["Claim", "State", "Sandbox", "Age"],
    o.claims.map((c) => h("tr", {},
      h("td", {}, c.name), h("td", { title: c.message ?? "" }, badge(c.state)),
      h("td", {}, c.sandbox ? link(c.sandbox) : "–"), h("td", {}, ago(c.created)))),
    "No claims.")));
  out.push(h("section", {}, h("h2", {}, "Sandboxes"), table(
    ["Sandbox", "State", "Age", "Idle", "Owner", "Expires"],
    o.sandboxes.map((s) => h("tr", { "data-sandbox": s.name },
      h("td", {}, link(s.name)), h("td", { title: s.message ?? "" }, badge(s.state)),
      h("td", {}, ago(s.created)),
      h("td", { title: s.idleReason ?? "" }, s.lastActive ? ago(s.lastActive) : "–"),
      h("td", {}, s.owner ?? "–"), h("td", {}, until(s.shutdownTime)))),
    "No sandboxes.")));
  out.push(pictures(m));
  return out;
}

const time = (t) => new Date(t).getTime();

function pictures(m) {
  if (!m?.configured) {
    return h("section", { class: "pictures" }, h("h2", {}, "Pictures"),
      h("p", { class: "muted small" }, "Claim latency and pool sizes: the router has no --ui-metrics-url."));
  }
  const note = m.error ? ` (${m.error})` : "";
  const latency = m.points.filter((p) => p.latencyMs !== undefined).map((p) => ({ t: time(p.t), v: p.latencyMs }));
  const charts = [h("figure", {}, lineChart([{ name: "claim → Ready (ms)", points: latency }], "ms"),
    h("figcaption", {}, "Claim latency, mean per 15 s, from kubox-controller's metrics", note))];
  if (m.poolsDenied) {
    charts.push(h("p", { class: "muted small", id: "pools-denied" }, m.poolsDenied));
  } else {
    const series = (m.pools ?? []).map((s) => ({ name: s.template, points: s.points.map((p) => ({ t: time(p.t), v: p.ready })) }));
    charts.push(h("figure", { id: "pool-sizes" }, lineChart(series, "ready"),
      h("figcaption", {}, "Ready warm sandboxes per template, every 15 s, from kubox-controller's metrics", note)));
  }
  return h("section", { class: "pictures" }, h("h2", {}, "Pictures"), charts);
}
