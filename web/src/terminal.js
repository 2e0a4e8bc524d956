// The sandbox's terminal: xterm.js over the router's WebSocket to a shell on a PTY in the
// sandbox. The token goes in the first message: a browser cannot set a WebSocket's headers.
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import "@xterm/xterm/css/xterm.css";
import { API, sandboxPath, token } from "./api.js";
import { h } from "./dom.js";

const PROTOCOL = "kubox.terminal.v1";

export function openTerminal(parent, ns, name) {
  const box = h("div", { id: "terminal", class: "terminal" });
  const status = h("p", { class: "muted small", id: "terminal-status" }, "Connecting…");
  parent.replaceChildren(box, status);
  const term = new Terminal({ cursorBlink: true, fontSize: 13, scrollback: 5000, convertEol: false });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  const url = new URL(API + sandboxPath(ns, name) + "/terminal", location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url, PROTOCOL);
  ws.binaryType = "arraybuffer";
  const enc = new TextEncoder();
  ws.onopen = () => {
    ws.send(JSON.stringify({ token: token(), rows: term.rows, cols: term.cols }));
    status.textContent = "Connected";
    term.focus();
  };
  ws.onmessage = (e) => {
    if (typeof e.data !== "string") {
      term.write(new Uint8Array(e.data));
      return;
    }
    const m = JSON.parse(e.data);
    if (m.type === "exit") status.textContent = `The shell exited (${m.code ?? 0}).`;
    if (m.type === "error") status.textContent = m.message;
  };
  ws.onclose = () => {
    if (status.textContent === "Connected") status.textContent = "Disconnected.";
  };
  const onData = term.onData((d) => ws.readyState === WebSocket.OPEN && ws.send(enc.encode(d)));
  const onResize = term.onResize(({ rows, cols }) =>
    ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: "resize", rows, cols })));
  const refit = () => fit.fit();
  window.addEventListener("resize", refit);
  return () => {
    window.removeEventListener("resize", refit);
    onData.dispose();
    onResize.dispose();
    ws.close();
    term.dispose();
  };
}
