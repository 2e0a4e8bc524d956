// Port-forwarding to kubox-router through the API server, for programs outside the cluster with
// only a kubeconfig: a listener on 127.0.0.1 whose every connection goes to a ready Pod behind the
// router's Service, over the Pod's portforward subresource (@kubernetes/client-node's WebSocket
// port-forward), as the Go and Python SDKs' port-forward mode.

import { createServer, type Server, type Socket } from "node:net";

import { PortForward } from "@kubernetes/client-node";

import { ConfigError, KuboxError, SandboxConnectionError } from "./errors.js";
import type { Kube } from "./kube.js";

interface ServicePort {
  name?: string;
  port?: number;
}

interface EndpointSlice {
  ports?: { name?: string; port?: number }[];
  endpoints?: { conditions?: { ready?: boolean }; targetRef?: { kind?: string; name?: string } }[];
}

/** routerPod is a ready Pod behind the Service and the port its router listens on, from the Service's EndpointSlices. */
export async function routerPod(kube: Kube, namespace: string, service: string, servicePort: number): Promise<{ pod: string; port: number }> {
  const what = `Service ${namespace}/${service}`;
  let svc: { spec?: { ports?: ServicePort[] } };
  let slices: { items?: EndpointSlice[] };
  try {
    svc = await kube.getPath(`/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(service)}`, what);
    slices = await kube.getPath(`/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/endpointslices?labelSelector=${
      encodeURIComponent(`kubernetes.io/service-name=${service}`)}`, `the EndpointSlices of ${what}`);
  } catch (e) {
    throw new ConfigError(`port-forward to kubox-router: ${e instanceof Error ? e.message : String(e)}; the identity needs get on ` +
      `services and list on endpointslices (discovery.k8s.io) in ${namespace}, or set routerURL (or $KUBOX_ROUTER_URL) instead`, { cause: e });
  }
  const ports = svc.spec?.ports ?? [];
  const portName = (ports.find((p) => p.port === servicePort) ?? ports[0])?.name;
  for (const sl of slices.items ?? []) {
    const target = sl.ports?.find((p) => p.name === portName)?.port;
    for (const ep of sl.endpoints ?? []) {
      if (target && ep.conditions?.ready !== false && ep.targetRef?.kind === "Pod" && ep.targetRef.name) {
        return { pod: ep.targetRef.name, port: target };
      }
    }
  }
  throw new SandboxConnectionError(`port-forward to kubox-router: ${what} has no ready Pod (is kubox installed? \`kubectl -n ${namespace} get pods\`)`);
}

/** RouterForward is a running port-forward to kubox-router: its url is http://127.0.0.1:<port>. */
export class RouterForward {
  readonly url: string;
  readonly #server: Server;
  readonly #sockets: Set<Socket>;

  private constructor(server: Server, port: number, sockets: Set<Socket>) {
    this.#server = server;
    this.#sockets = sockets;
    this.url = `http://127.0.0.1:${port}`;
  }

  /** start finds the router's Pod and listens on 127.0.0.1 for connections to forward to it. */
  static async start(kube: Kube, namespace: string, service: string, servicePort: number): Promise<RouterForward> {
    const { pod, port } = await routerPod(kube, namespace, service, servicePort);
    const pf = new PortForward(kube.config);
    const sockets = new Set<Socket>();
    const server = createServer((conn) => {
      sockets.add(conn);
      conn.on("close", () => sockets.delete(conn));
      conn.on("error", () => conn.destroy());
      pf.portForward(namespace, pod, [port], conn, null, conn).then((ws: unknown) => {
        // A WebSocket, or (with retries) a function that returns the current one.
        type Closer = { close(): void } | null;
        const socket = typeof ws === "function" ? (ws as () => Closer)() : (ws as Closer);
        conn.on("close", () => socket?.close());
      }).catch(() => conn.destroy());
    });
    const listening = await new Promise<number>((ok, fail) => {
      server.once("error", fail);
      server.listen(0, "127.0.0.1", () => {
        const addr = server.address();
        if (typeof addr === "object" && addr) ok(addr.port);
        else fail(new KuboxError("port-forward to kubox-router: no local port"));
      });
    });
    server.unref();
    return new RouterForward(server, listening, sockets);
  }

  /** close stops listening and ends the forwarded connections. */
  close(): void {
    this.#server.close();
    for (const s of this.#sockets) s.destroy();
  }
}
