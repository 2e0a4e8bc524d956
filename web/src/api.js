// The dashboard's API client: every call carries the viewer's Kubernetes token, which the page
// keeps in sessionStorage (gone when the tab closes) and the router acts with.
const TOKEN_KEY = "kubox-token";
export const API = "api/";

export const token = () => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (t) => sessionStorage.setItem(TOKEN_KEY, t);
export const clearToken = () => sessionStorage.removeItem(TOKEN_KEY);

// ApiError carries the router's status and message.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// call sends method to path (under api/) and answers the JSON, or throws ApiError. A 401 sends
// the viewer back to the login page.
export async function call(method, path, body, raw = false) {
  const headers = { Authorization: `Bearer ${token()}` };
  let payload = body;
  if (body !== undefined && !(body instanceof Blob)) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const res = await fetch(API + path, { method, headers, body: payload });
  if (!res.ok) {
    let msg = res.statusText;
    try {
      msg = (await res.json()).error ?? msg;
    } catch {
      // not JSON: keep the status text
    }
    if (res.status === 401) {
      clearToken();
      location.hash = "#/login";
    }
    throw new ApiError(res.status, msg);
  }
  return raw ? res : res.json();
}

export const sandboxPath = (ns, name) =>
  `namespaces/${encodeURIComponent(ns)}/sandboxes/${encodeURIComponent(name)}`;
