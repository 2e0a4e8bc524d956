// A sandbox's page: its state, the actions RBAC allows the viewer, its conditions and Events,
// and tabs for its terminal, files and code interpreter.
import { call, sandboxPath } from "./api.js";
import { h, ago, badge, table, errorBox, until } from "./dom.js";
import { openTerminal } from "./terminal.js";
import { renderFiles } from "./files.js";
import { newCodeState, renderCode } from "./code.js";

const TABS = { terminal: "Terminal", files: "Files", code: "Code" };

export function renderSandbox(main, ns, name) {
  const path = sandboxPath(ns, name);
  const head = h("div", { id: "sandbox-head" });
  const info = h("div");
  const tabBody = h("div", { class: "tab-body" });
  let closeTab = () => {};
  const code = newCodeState();
  const tabs = h("nav", { class: "tabs" });
  main.replaceChildren(
    h("p", {}, h("a", { href: `#/ns/${encodeURIComponent(ns)}` }, `← ${ns}`)),
    head, info, tabs, tabBody);

  const show = (which, can) => {
    closeTab();
    closeTab = () => {};
    for (const b of tabs.children) b.classList.toggle("active", b.dataset.tab === which);
    if (!can.connect) {
      tabBody.replaceChildren(h("p", { class: "muted", id: "no-connect" },
        "RBAC does not let you connect to this sandbox (create sandboxes/connect): no terminal, files or code."));
    } else if (which === "terminal") {
      closeTab = openTerminal(tabBody, ns, name);
    } else if (which === "code") {
      closeTab = renderCode(tabBody, ns, name, code);
    } else {
      closeTab = renderFiles(tabBody, ns, name);
    }
  };

  let current = null;
  const load = async () => {
    try {
      const d = await call("GET", path);
      head.replaceChildren(...header(ns, name, d, path, load));
      info.replaceChildren(...details(d));
      if (!current) {
        current = "terminal";
        // Every tab reaches the sandbox as the viewer: without connect there is none to show.
        if (d.can.connect) {
          tabs.replaceChildren(...Object.entries(TABS).map(([t, label]) =>
            h("button", { class: "tab", "data-tab": t, id: `tab-${t}`, onclick: () => show(t, d.can) }, label)));
        }
        show(current, d.can);
      }
    } catch (err) {
      head.replaceChildren(errorBox(err));
    }
  };
  load();
  const timer = setInterval(load, 5000);
  return () => {
    clearInterval(timer);
    closeTab();
  };
}

function header(ns, name, d, path, reload) {
  const s = d.sandbox;
  const msg = h("span", { class: "muted small" });
  const act = (label, id, fn) => h("button", { id, onclick: async () => {
    try {
      await fn();
      msg.textContent = `${label}: done`;
      reload();
    } catch (err) {
      msg.textContent = `${label}: ${err.message}`;
    }
  } }, label);
  const buttons = [];
  if (d.can.suspend && !s.suspended) buttons.push(act("Suspend", "suspend", () => call("POST", `${path}/suspend`)));
  if (d.can.resume && s.suspended) buttons.push(act("Resume", "resume", () => call("POST", `${path}/resume`)));
  if (d.can.extend) buttons.push(act("Extend 1 h", "extend", () => call("POST", `${path}/extend`, { seconds: 3600 })));
  if (d.can.delete) buttons.push(act("Delete", "delete", async () => {
    if (!confirm(`Delete sandbox ${ns}/${name}?`)) throw new Error("cancelled");
    await call("DELETE", path);
    location.hash = `#/ns/${encodeURIComponent(ns)}`;
  }));
  return [
    h("h1", {}, name, " ", badge(s.state)),
    h("p", { class: "muted" }, `${ns} · created ${ago(s.created)} ago · owner ${s.owner ?? "none"}`,
      ` · last active ${s.lastActive ? ago(s.lastActive) + " ago" : "–"}`, s.idleReason ? ` (${s.idleReason})` : "",
      ` · expires ${until(s.shutdownTime)}`, d.claim ? ` (claim ${d.claim})` : ""),
    h("div", { class: "actions" }, buttons, msg),
  ];
}

function details(d) {
  const out = [];
  for (const x of d.denied ?? []) out.push(h("div", { class: "note" }, x));
  out.push(h("details", { open: true }, h("summary", {}, "Conditions"), table(
    ["Type", "Status", "Reason", "Message", "Since"],
    d.conditions.map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason),
      h("td", { class: "small" }, c.message), h("td", {}, ago(c.lastTransitionTime)))), "No conditions.")));
  out.push(h("details", {}, h("summary", {}, `Events (${d.events.length})`), table(
    ["Type", "Reason", "Object", "Message", "Count", "Last"],
    d.events.map((e) => h("tr", {}, h("td", {}, e.type), h("td", {}, e.reason), h("td", {}, e.object),
      h("td", { class: "small" }, e.message), h("td", {}, e.count), h("td", {}, ago(e.last)))), "No events.")));
  return out;
}
