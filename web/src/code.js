// The sandbox's code interpreter: a code box run through the router in a context of the page's
// own per language, so state stays between runs; the output streams as it is printed. What the
// sandbox answers is hostile: text goes in as text, HTML only into an <iframe sandbox> (no
// scripts, an opaque origin), images only as <img> from data: URLs (SVG too: never inline).
import { call, sandboxPath } from "./api.js";
import { h, errorBox } from "./dom.js";

const LANGUAGES = ["python", "javascript", "bash"];
const EXAMPLE = "x = 41\nprint('hello from the sandbox')\nx + 1";

// newCodeState is what a sandbox's page keeps between visits of the tab: its contexts by
// language and the code box's text.
export const newCodeState = () => ({ contexts: {}, code: EXAMPLE, language: "python" });

export function renderCode(parent, ns, name, state) {
  const base = sandboxPath(ns, name) + "/code";
  const input = h("textarea", { id: "code-input", class: "code-input", rows: 8, spellcheck: "false",
    "aria-label": "Code", oninput: () => { state.code = input.value; } });
  input.value = state.code;
  const language = h("select", { id: "code-language", "aria-label": "Language", onchange: () => { state.language = language.value; } },
    LANGUAGES.map((l) => h("option", { value: l }, l)));
  language.value = state.language;
  const status = h("span", { class: "muted small", id: "code-status" });
  const output = h("div", { id: "code-output" });
  const runButton = h("button", { id: "code-run", type: "button", class: "primary", title: "Ctrl+Enter", onclick: () => run() }, "Run");
  const restart = h("button", { id: "code-restart", type: "button", onclick: () => restartContext() }, "Restart");
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  });
  parent.replaceChildren(h("div", { class: "toolbar" }, language, runButton, restart, status), input, output);

  let busy = false;
  // reading is the body of the run in progress: leaving the tab cancels it, which closes the
  // request, and the interpreter interrupts the run (the context stays).
  let reading = null;
  const contextFor = async (lang) => {
    state.contexts[lang] ??= (await call("POST", `${base}/contexts`, { language: lang })).id;
    return state.contexts[lang];
  };
  // execute runs code in lang's context; a context the sandbox no longer has (its agent
  // restarted) is made again, once, and the page says the state is gone.
  const execute = async (code, lang) => {
    try {
      return await call("POST", base, { code, context_id: await contextFor(lang) }, true);
    } catch (err) {
      if (err.status !== 404 || !state.contexts[lang]) throw err;
      delete state.contexts[lang];
      status.textContent = `The sandbox no longer had this page's ${lang} context: a new one runs the code, without the earlier state.`;
      return call("POST", base, { code, context_id: await contextFor(lang) }, true);
    }
  };
  const run = async () => {
    const code = input.value;
    if (busy || code.trim() === "") return;
    busy = true;
    runButton.disabled = true;
    const lang = language.value;
    const out = h("div", { class: "code-run" });
    const cell = h("div", { class: "code-cell" }, h("pre", { class: "code-src" }, code), out);
    output.append(cell);
    status.textContent = "Running…";
    try {
      const res = await execute(code, lang);
      reading = res.body.getReader();
      let ended = false;
      await readLines(reading, (m) => {
        ended ||= m.type === "end_of_execution" || m.type === "error";
        show(out, m);
      });
      if (!ended) out.append(errorBox(new Error("The run's output ended before the code interpreter said the run was done.")));
      status.textContent = "";
    } catch (err) {
      out.append(errorBox(err));
      status.textContent = "";
    } finally {
      out.dataset.done = "";
      reading = null;
      busy = false;
      runButton.disabled = false;
      cell.scrollIntoView({ block: "nearest" });
    }
  };
  const restartContext = async () => {
    const lang = language.value;
    const id = state.contexts[lang];
    if (!id) {
      status.textContent = `Restarted: there was no ${lang} context yet.`;
      return;
    }
    try {
      await call("POST", `${base}/contexts/${encodeURIComponent(id)}/restart`);
      status.textContent = `Restarted: the ${lang} context starts again, without its state.`;
    } catch (err) {
      status.textContent = `Restart: ${err.message}`;
    }
  };
  return () => {
    reading?.cancel();
  };
}

// readLines calls each with every NDJSON message reader gives, as it arrives.
async function readLines(reader, each) {
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    buf += done ? dec.decode() : dec.decode(value, { stream: true });
    const lines = buf.split("\n");
    buf = done ? "" : lines.pop();
    for (const line of lines) {
      if (line.trim() === "") continue;
      try {
        each(JSON.parse(line));
      } catch {
        each({ type: "error", name: "StreamError", value: "the dashboard could not read a message of the code interpreter" });
      }
    }
    if (done) return;
  }
}

// show adds one message of the code interpreter to a run's output.
function show(out, m) {
  switch (m.type) {
    case "stdout":
    case "stderr": {
      const last = out.lastElementChild;
      const text = stripAnsi(String(m.text ?? ""));
      if (last && last.classList.contains(`code-${m.type}`)) last.append(text);
      else out.append(h("pre", { class: `code-${m.type}` }, text));
      break;
    }
    case "result":
      out.append(result(m));
      break;
    case "error":
      out.append(h("div", { class: "code-error", role: "alert" },
        h("strong", {}, `${m.name ?? "Error"}: ${m.value ?? ""}`),
        m.traceback ? h("pre", {}, stripAnsi(String(m.traceback))) : null));
      break;
  }
}

// result shows a result's richest format: an image, HTML (confined), Markdown and LaTeX as
// their text, JSON pretty-printed, else its text.
function result(m) {
  const img = (type, b64) => h("img", { class: "code-image", alt: `${type} result`, src: `data:${type};base64,${b64}` });
  if (isBase64(m.png)) return img("image/png", clean(m.png));
  if (isBase64(m.jpeg)) return img("image/jpeg", clean(m.jpeg));
  if (typeof m.svg === "string") return img("image/svg+xml", utf8Base64(m.svg));
  if (typeof m.html === "string") {
    // No allow-* flag: no scripts, no forms, no popups, an opaque origin; and the page's
    // Content-Security-Policy, which a srcdoc document inherits, lets it load nothing remote.
    return h("iframe", { sandbox: "", class: "code-html", title: "HTML result", referrerpolicy: "no-referrer", srcdoc: m.html,
      onload: (e) => { e.target.dataset.loaded = ""; } });
  }
  const text = (s, cls = "code-result") => h("pre", { class: cls }, s);
  if (typeof m.markdown === "string") return text(m.markdown, "code-result code-markdown");
  if (typeof m.latex === "string") return text(m.latex);
  if (m.json !== undefined) return text(JSON.stringify(m.json, null, 2), "code-result code-json");
  return text(String(m.text ?? ""));
}

const clean = (s) => s.replace(/\s+/g, "");
const isBase64 = (s) => typeof s === "string" && /^[A-Za-z0-9+/=\s]+$/.test(s);

function utf8Base64(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

// stripAnsi removes terminal escape sequences (colours, cursor moves) from a traceback or output.
const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g;
const stripAnsi = (s) => s.replace(ANSI, "");
