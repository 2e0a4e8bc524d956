// The sandbox's files: list a directory, download a file, upload into the directory; each
// through the router to the sandbox's agent.
import { call, sandboxPath } from "./api.js";
import { h, ago, bytes, table, errorBox } from "./dom.js";

export function renderFiles(parent, ns, name) {
  const base = sandboxPath(ns, name) + "/files";
  let dir = "/";
  const crumbs = h("div", { class: "crumbs", id: "files-path" });
  const list = h("div", { id: "files" });
  const msg = h("span", { class: "muted small", id: "upload-status" });
  const picker = h("input", { type: "file", id: "upload", multiple: true, onchange: async () => {
    for (const f of picker.files) {
      msg.textContent = `Uploading ${f.name}…`;
      try {
        await call("PUT", `${base}/content?path=${encodeURIComponent(join(dir, f.name))}`, f);
        msg.textContent = `Uploaded ${f.name}`;
      } catch (err) {
        msg.textContent = `${f.name}: ${err.message}`;
      }
    }
    picker.value = "";
    load();
  } });
  parent.replaceChildren(h("div", { class: "toolbar" }, crumbs, h("label", { class: "button" }, "Upload ", picker), msg), list);

  const load = async () => {
    crumbs.replaceChildren(...breadcrumbs(dir, (d) => {
      dir = d;
      load();
    }));
    try {
      const res = await call("GET", `${base}?path=${encodeURIComponent(dir)}`);
      list.replaceChildren(table(["Name", "Size", "Modified", ""], res.entries.map((e) => h("tr", { "data-file": e.name },
        h("td", {}, e.dir ? h("a", { href: "#", onclick: (ev) => {
          ev.preventDefault();
          dir = join(dir, e.name);
          load();
        } }, `${e.name}/`) : e.name),
        h("td", {}, e.dir ? "" : bytes(e.size)), h("td", {}, ago(e.modified)),
        h("td", {}, e.dir ? "" : h("button", { class: "link", onclick: () => download(base, join(dir, e.name), e.name) }, "Download")))),
      "The directory is empty."));
    } catch (err) {
      list.replaceChildren(errorBox(err));
    }
  };
  load();
  return () => {};
}

// download fetches the file with the token (a link could not carry it) and saves it.
async function download(base, path, name) {
  const res = await call("GET", `${base}/content?path=${encodeURIComponent(path)}`, undefined, true);
  const url = URL.createObjectURL(await res.blob());
  const a = h("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function join(dir, name) {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

function breadcrumbs(dir, go) {
  const parts = dir.split("/").filter(Boolean);
  const out = [h("a", { href: "#", onclick: (e) => { e.preventDefault(); go("/"); } }, "/")];
  parts.forEach((p, i) => {
    const to = "/" + parts.slice(0, i + 1).join("/");
    out.push(h("a", { href: "#", onclick: (e) => { e.preventDefault(); go(to); } }, p), "/");
  });
  return out;
}
