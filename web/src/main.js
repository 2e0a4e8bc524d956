// kubox's dashboard: a login page, a namespace's overview and a sandbox's page, routed by the
// URL's hash so the router serves one static page.
import "./style.css";
import { call, clearToken, setToken, token } from "./api.js";
import { h, errorBox } from "./dom.js";
import { renderOverview } from "./overview.js";
import { renderSandbox } from "./sandbox.js";

const main = document.getElementById("main");
let leave = () => {};
let viewer = null;

// route renders the page the hash names; the page it leaves stops its timers and sockets.
async function route() {
  leave();
  leave = () => {};
  if (!token() || location.hash === "#/login") {
    renderLogin();
    return;
  }
  try {
    viewer ??= await call("GET", "whoami");
  } catch (err) {
    if (err.status !== 401) main.replaceChildren(errorBox(err));
    return;
  }
  showViewer();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "sandbox" && parts.length === 3) {
    leave = renderSandbox(main, parts[1], parts[2]);
  } else {
    const ns = parts[0] === "ns" && parts[1] ? parts[1] : viewer.namespace;
    leave = renderOverview(main, ns, viewer);
  }
}

function showViewer() {
  document.getElementById("who").replaceChildren(
    h("span", { class: "muted" }, viewer.user),
    h("button", { class: "link", id: "logout", onclick: () => {
      clearToken();
      viewer = null;
      location.hash = "#/login";
    } }, "Log out"),
  );
}

function renderLogin() {
  document.getElementById("who").replaceChildren();
  viewer = null;
  const input = h("textarea", { id: "token", rows: 4, placeholder: "eyJhbGciOi…", autocomplete: "off", spellcheck: "false" });
  const out = h("div");
  const form = h("form", { class: "card login", onsubmit: async (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    try {
      viewer = await call("GET", "whoami");
      location.hash = "#/";
      route();
    } catch (err) {
      out.replaceChildren(errorBox(err));
    }
  } },
  h("h1", {}, "Log in"),
  h("p", {}, "Paste a Kubernetes token. The dashboard acts as you: RBAC decides what you see and do. ",
    "The token stays in this tab (sessionStorage)."),
  h("pre", { class: "hint" }, "kubectl create token <serviceaccount> -n <namespace>"),
  input,
  h("button", { type: "submit", id: "login" }, "Log in"),
  out);
  main.replaceChildren(form);
  input.focus();
}

window.addEventListener("hashchange", route);
route();
