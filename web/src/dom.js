// A few helpers to build the page without a framework.

// h makes an element: h("a", {href: "#"}, "text", child, ...). Attributes starting with "on"
// are listeners; text is never parsed as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// ago says how long before now t was: "42s", "5m", "3h", "2d".
export function ago(t) {
  if (!t) return "–";
  const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

// until says how long after now t is ("expired" when past).
export function until(t) {
  if (!t) return "never";
  const s = (new Date(t).getTime() - Date.now()) / 1000;
  if (s <= 0) return "expired";
  return `in ${ago(Date.now() - s * 1000)}`;
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${(n / (1 << 30)).toFixed(1)} GiB`;
}

// badge shows a state, colored by what it means.
export function badge(state) {
  const cls = state === "Ready" ? "ok" : /Suspend|Pending|Deleting|Creating|Progress/.test(state) ? "warn" : "bad";
  return h("span", { class: `badge ${cls}` }, state);
}

export function table(headers, rows, empty = "None") {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))), h("tbody", {}, rows));
}

export function errorBox(err) {
  return h("div", { class: "error", role: "alert" }, err.message ?? String(err));
}
