// A sandbox: processes and files through its agent, reached through kubox-router (or at an
// agent's own URL) with a bearer token. This module imports no node:* module: @kubox/sdk/web
// exports its Sandbox as it is (fetch), @kubox/sdk the one of sandbox-node.ts (Node's http).

import { timestampDate } from "@bufbuild/protobuf/wkt";

import type { Client, SnapshotOptions } from "./client.js";
import { type CodeContext, type CodeLanguage, contextsCall, type Execution, runCode, type RunCodeOptions } from "./code.js";
import { callError, CommandError, ConfigError, KuboxError } from "./errors.js";
import { Files, type LocalFiles } from "./files.js";
import type { ProcessEvent as PbProcessEvent } from "./gen/kubox/agent/v1/process_pb.js";
import type { KubeObject } from "./kube.js";
import { type Command, type CommandResult, type ExitEvent, Process, processSpec, resultOf, type RunOptions, type StartOptions } from "./process.js";
import { fetchDialer } from "./transport-fetch.js";
import { claimRouterURL, type Dialer, Endpoint, sandboxRouterURL } from "./transport.js";

/** Platform is what a Sandbox takes from its runtime: an HTTP client and, in Node, local files. */
export interface Platform {
  dial: Dialer;
  local?: LocalFiles;
}

/** KeepAlive's shortest interval: the idle policy's shortest suspendAfter is 30s. */
export const minKeepAliveIntervalMs = 1000;

/** A process the agent tracks (Sandbox.processes). */
export interface ProcessInfo {
  id: string;
  pid: number;
  /** What runs; for a shell line, the shell's argv. */
  argv: string[];
  tag: string;
  pty: boolean;
  startedAt: Date | undefined;
  /** How it ended; undefined while it runs. */
  exit: ExitEvent | undefined;
  stdinOpen: boolean;
}

/** Options of Sandbox.attach. */
export interface AttachOptions {
  /** Names the sandbox in error messages; default the URL. */
  name?: string;
}

/** Options of Sandbox.fromRouter. */
export interface RouterOptions {
  /** kubox-router's base URL, e.g. http://127.0.0.1:18080; default $KUBOX_ROUTER_URL. */
  routerURL?: string;
  /** The bearer token: a claim token, a Kubernetes token the router accepts, or its shared token. */
  token: string;
  /** The namespace of the claim or sandbox; default "default". */
  namespace?: string;
}

/**
 * Sandbox is a handle on one kubox sandbox: it runs processes (run, start), moves files (files)
 * and keeps an idle sandbox awake (keepAlive). Get one with Sandbox.attach (an agent API URL and
 * a token, no Kubernetes API: the claim-token-only mode for browsers' backends and edge
 * functions), Sandbox.claimToken or Sandbox.fromRouter.
 */
export class Sandbox {
  /** The sandbox's namespace; "" when attached by URL. */
  readonly namespace: string;
  /** The sandbox's name, or what names it in messages. */
  readonly name: string;
  /** The claim it was reached through; "" otherwise. */
  readonly claimName: string;
  /** The sandbox's files. */
  readonly files: Files;

  /** @internal Client.claim sets it: close deletes the claim. */
  ownsClaim = false;

  /** Where the agent is now: fixed through the router, the current Pod's in direct mode. */
  readonly #endpoint: () => Promise<Endpoint>;
  readonly #kube: { client: Client; obj: KubeObject } | undefined;
  #closed = false;

  /** @internal The runtime Sandbox.attach, claimToken and fromRouter use: fetch here, Node's in sandbox-node.ts. */
  static readonly platform: Platform = { dial: fetchDialer };

  /** @internal Use Client.claim/connect/open, Sandbox.attach, Sandbox.claimToken or Sandbox.fromRouter. */
  constructor(endpoint: Endpoint | (() => Promise<Endpoint>), ids: { namespace: string; name: string; claim: string },
    kube?: { client: Client; obj: KubeObject }) {
    this.#endpoint = endpoint instanceof Endpoint ? () => Promise.resolve(endpoint) : endpoint;
    this.#kube = kube;
    this.namespace = ids.namespace;
    this.name = ids.name;
    this.claimName = ids.claim;
    this.files = new Files(this.#endpoint, this.#object(), new.target.platform.local);
  }

  /**
   * attach reaches a sandbox's agent API at url with the bearer token, without the Kubernetes
   * API: kubox-router's `<router>/claims/<ns>/<claim>` with a claim token (`kubox token`),
   * `<router>/sandboxes/<ns>/<name>`, or an agent's own URL with its agent token.
   */
  static attach(url: string, token: string, opts: AttachOptions = {}): Sandbox {
    if (!url) throw new ConfigError("Sandbox.attach needs the agent API's URL, e.g. http://127.0.0.1:18080/claims/default/my-claim");
    if (!token) throw new ConfigError("Sandbox.attach needs a bearer token: a claim token from `kubox token <claim>`, or the agent's token");
    return new this(new Endpoint(url, token, this.platform.dial), { namespace: "", name: opts.name ?? url, claim: "" });
  }

  /**
   * claimToken reaches the sandbox of claim through kubox-router with a claim token (or any
   * token the router accepts for the claim): `<router>/claims/<ns>/<claim>`.
   */
  static claimToken(claim: string, opts: RouterOptions): Sandbox {
    const { router, ns } = routerOf(opts);
    return new this(new Endpoint(claimRouterURL(router, ns, claim), opts.token, this.platform.dial), { namespace: ns, name: claim, claim });
  }

  /** fromRouter reaches Sandbox name through kubox-router: `<router>/sandboxes/<ns>/<name>`. */
  static fromRouter(name: string, opts: RouterOptions): Sandbox {
    const { router, ns } = routerOf(opts);
    return new this(new Endpoint(sandboxRouterURL(router, ns, name), opts.token, this.platform.dial), { namespace: ns, name, claim: "" });
  }

  toString(): string {
    return this.namespace ? `${this.namespace}/${this.name}` : this.name;
  }

  #object(): string {
    return `sandbox ${this.toString()}`;
  }

  /**
   * runCode runs code in the sandbox's code interpreter and returns its results, output and
   * error. State (variables, imports, the working directory) stays in the context for the next
   * call: the default context of opts.language (default python), or opts.context. An exception
   * in the code is Execution.error, not a rejection; onStdout/onStderr get output as it is
   * printed.
   */
  async runCode(code: string, opts: RunCodeOptions = {}): Promise<Execution> {
    return runCode(await this.#endpoint(), code, opts, this.#object());
  }

  /** createCodeContext starts a context of its own (default python, in the agent's working directory). */
  async createCodeContext(opts: { language?: CodeLanguage; cwd?: string; signal?: AbortSignal } = {}): Promise<CodeContext> {
    const body = { ...(opts.language ? { language: opts.language } : {}), ...(opts.cwd ? { cwd: opts.cwd } : {}) };
    return (await contextsCall(await this.#endpoint(), "POST", "/contexts", this.#object(), body, opts.signal)) as CodeContext;
  }

  /** listCodeContexts lists the code interpreter's contexts, the default ones used so far among them. */
  async listCodeContexts(opts: { signal?: AbortSignal } = {}): Promise<CodeContext[]> {
    return ((await contextsCall(await this.#endpoint(), "GET", "/contexts", this.#object(), undefined, opts.signal)) ?? []) as CodeContext[];
  }

  /** restartCodeContext stops the context's interpreter; the next runCode in it starts afresh. */
  async restartCodeContext(context: CodeContext, opts: { signal?: AbortSignal } = {}): Promise<void> {
    await contextsCall(await this.#endpoint(), "POST", `/contexts/${encodeURIComponent(context.id)}/restart`, this.#object(), undefined, opts.signal);
  }

  /** removeCodeContext stops the context's interpreter and removes the context. */
  async removeCodeContext(context: CodeContext, opts: { signal?: AbortSignal } = {}): Promise<void> {
    await contextsCall(await this.#endpoint(), "DELETE", `/contexts/${encodeURIComponent(context.id)}`, this.#object(), undefined, opts.signal);
  }

  /**
   * run runs a command to completion and returns its exit code and output. A non-zero exit is
   * not an error unless opts.check; aborting opts.signal makes the agent kill the process.
   */
  async run(cmd: Command, opts: RunOptions = {}): Promise<CommandResult> {
    const spec = processSpec(cmd, opts);
    const stdin = typeof opts.stdin === "string" ? new TextEncoder().encode(opts.stdin) : opts.stdin;
    let res: CommandResult;
    try {
      const ep = await this.#endpoint();
      const m = await ep.process.runProcess(
        { spec, stdin: stdin ?? new Uint8Array(), maxOutputBytes: BigInt(opts.maxOutputBytes ?? 0) },
        { signal: opts.signal },
      );
      res = resultOf(m);
    } catch (e) {
      throw callError(e, this.#object());
    }
    if (opts.check && res.exitCode !== 0) {
      throw new CommandError(`command ${JSON.stringify(cmd)} in ${this.#object()} exited with status ${res.exitCode}: ${res.stderr.trim().slice(-500)}`, res);
    }
    return res;
  }

  /**
   * start starts a command and returns once the agent runs it; its output streams as it is
   * written (iterate the Process, or wait() with onStdout/onStderr). Aborting opts.signal sends
   * SIGKILL to the process group. A broken connection does not stop the process: the Process
   * follows it again from the last byte it read.
   */
  async start(cmd: Command, opts: StartOptions = {}): Promise<Process> {
    const spec = processSpec(cmd, opts);
    const abort = new AbortController();
    const signal = opts.signal ? AbortSignal.any([abort.signal, opts.signal]) : abort.signal;
    const req = {
      spec,
      stdin: opts.stdin !== undefined && opts.stdin !== false,
      flowControl: true,
      pty: opts.tty ? { rows: opts.tty.rows, cols: opts.tty.cols } : undefined,
    };
    const ep = await this.#endpoint();
    const it = ep.process.startProcess(req, { signal })[Symbol.asyncIterator]();
    let first: IteratorResult<{ event?: PbProcessEvent }>;
    try {
      first = await it.next();
    } catch (e) {
      abort.abort();
      throw callError(e, this.#object());
    }
    const started = first.done ? undefined : first.value.event?.event;
    if (started?.case !== "started") {
      abort.abort();
      throw new KuboxError(`${this.#object()}: the agent's first event is not Started`);
    }
    const proc = new Process(ep, this.#object(), { id: started.value.processId, pid: started.value.pid }, it, abort, opts);
    opts.signal?.addEventListener("abort", () => void proc.kill().catch(() => undefined), { once: true });
    return proc;
  }

  /**
   * attachProcess follows a running or recently exited process again — one started by another
   * program, or by this one before it lost its Process — from the first byte the agent still
   * keeps (its replay buffer, 1 MiB per stream by default). The Process works as start's.
   */
  async attachProcess(id: string, opts: Omit<StartOptions, "stdin" | "tty" | "env" | "cwd" | "timeoutMs" | "tag"> = {}): Promise<Process> {
    const abort = new AbortController();
    const signal = opts.signal ? AbortSignal.any([abort.signal, opts.signal]) : abort.signal;
    const ep = await this.#endpoint();
    const it = ep.process.attachProcess({ processId: id, flowControl: true }, { signal })[Symbol.asyncIterator]();
    let first: IteratorResult<{ event?: PbProcessEvent }>;
    try {
      first = await it.next();
    } catch (e) {
      abort.abort();
      throw callError(e, `process ${id} in ${this.#object()}`);
    }
    const attached = first.done ? undefined : first.value.event?.event;
    if (attached?.case !== "attached") {
      abort.abort();
      throw new KuboxError(`process ${id} in ${this.#object()}: the agent's first event is not Attached`);
    }
    return new Process(ep, this.#object(), { id, pid: attached.value.pid }, it, abort, opts);
  }

  /** processes lists the processes the agent runs and, with includeExited, the recently exited ones it keeps. */
  async processes(opts: { includeExited?: boolean; signal?: AbortSignal } = {}): Promise<ProcessInfo[]> {
    try {
      const res = await (await this.#endpoint()).process.listProcesses({ includeExited: opts.includeExited ?? false }, { signal: opts.signal });
      return res.processes.map((p) => ({
        id: p.processId,
        pid: p.pid,
        argv: p.argv,
        tag: p.tag,
        pty: p.pty,
        startedAt: p.startedAt ? timestampDate(p.startedAt) : undefined,
        exit: p.exit ? { type: "exit", exitCode: p.exit.exitCode, signal: p.exit.signal, timedOut: p.exit.timedOut } : undefined,
        stdinOpen: p.stdinOpen,
      }));
    } catch (e) {
      throw callError(e, this.#object());
    }
  }

  /**
   * keepAlive holds a sandbox with an idle policy awake while the program works without sending
   * it requests: it calls the agent's cheap ListProcesses at once and then every intervalMs until
   * stopped. Each call is a request through kubox-router and to kubox-agent, which both count as
   * activity. A failed call is tried again at the next tick, except when the sandbox is gone or
   * the token is refused: then stop() throws that error.
   */
  keepAlive(intervalMs = 60_000): KeepAlive {
    if (intervalMs < minKeepAliveIntervalMs) {
      throw new ConfigError(`keepAlive's interval ${intervalMs}ms is below ${minKeepAliveIntervalMs}ms; use, say, a third of the idle policy's suspendAfter`);
    }
    return new KeepAlive(() => this.touch(), intervalMs);
  }

  /** object is the Sandbox object as last seen (claim, connect, open, suspend, resume); undefined when attached by URL. */
  get object(): KubeObject | undefined {
    return this.#kube?.obj;
  }

  /**
   * suspend sets the Sandbox's spec.operatingMode to Suspended (RBAC patch on sandboxes) and
   * waits, with one watch, until its Pod is gone (Suspended=True). Volumes, Service and claim stay.
   * With keepMemory (gVisor; spec.suspendPolicy.keepMemory) its memory is kept too, and resume
   * continues its processes; when it could not be kept, the sandbox is suspended without it and
   * MemoryNotKeptError gives the controller's reason.
   */
  async suspend(opts: { keepMemory?: boolean } = {}): Promise<void> {
    const kube = this.#kubeLink("set spec.operatingMode=Suspended");
    await kube.client.suspend(kube, opts.keepMemory ?? false, this.#object());
  }

  /**
   * snapshot checkpoints the running sandbox — processes, memory, open files, root filesystem
   * writes — without stopping it (gVisor and kubox-node): it creates a SandboxSnapshot and
   * returns it once Ready (RBAC create and watch on sandboxsnapshots). With filesystemOnly it
   * saves the files only; sandboxes started from it run afresh on them. SnapshotFailedError gives
   * the controller's reason when it cannot be taken.
   */
  async snapshot(opts: SnapshotOptions = {}): Promise<KubeObject> {
    const kube = this.#kubeLink("snapshot");
    return kube.client.snapshot(this.namespace, this.name, opts);
  }

  /**
   * fork snapshots the sandbox and starts n Sandboxes from the snapshot, returned once all are
   * Ready: each continues from the same memory with its own name (<name>-fork-xxxxx), agent
   * token and address; this one keeps running. Delete them with delete().
   */
  async fork(n = 1): Promise<Sandbox[]> {
    const kube = this.#kubeLink("fork");
    if (!(n >= 1)) throw new ConfigError(`fork: n is ${n}; want at least 1`);
    return kube.client.forkFrom(await this.snapshot(), n);
  }

  /** delete deletes the Sandbox itself (a fork); a sandbox from a claim is released with close(). */
  async delete(): Promise<void> {
    const kube = this.#kubeLink("delete");
    if (this.claimName) throw new ConfigError(`${this.#object()} belongs to claim ${this.claimName}: release it with close()`);
    await kube.client.deleteSandbox(this.namespace, this.name);
  }

  /** resume sets spec.operatingMode to Running and waits until the sandbox is Ready again. */
  async resume(): Promise<void> {
    await this.#setMode("Running");
  }

  async #setMode(mode: "Suspended" | "Running"): Promise<void> {
    const kube = this.#kubeLink(`set spec.operatingMode=${mode}`);
    await kube.client.setOperatingMode(kube, mode);
  }

  #kubeLink(doing: string): { client: Client; obj: KubeObject } {
    if (!this.#kube) {
      throw new ConfigError(`cannot ${doing} on ${this.#object()}: it was reached by URL and token; use Client.claim, connect or open`);
    }
    return this.#kube;
  }

  /**
   * close releases the sandbox: it deletes the claim when Client.claim created it (background
   * propagation: the Sandbox and its Pod go after). Idempotent; a claim already gone is fine.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.ownsClaim && this.#kube) await this.#kube.client.deleteClaim(this.namespace, this.claimName);
    this.#closed = true;
  }

  /** touch makes one request to the sandbox's agent (ListProcesses). */
  async touch(opts: { signal?: AbortSignal } = {}): Promise<void> {
    try {
      await (await this.#endpoint()).process.listProcesses({}, { signal: opts.signal });
    } catch (e) {
      throw callError(e, this.#object());
    }
  }
}

function routerOf(opts: RouterOptions): { router: string; ns: string } {
  const router = opts.routerURL ?? envVar("KUBOX_ROUTER_URL") ?? "";
  if (!router) {
    throw new ConfigError("no router URL: set routerURL or $KUBOX_ROUTER_URL to kubox-router's URL, e.g. http://127.0.0.1:18080 " +
      "(`kubectl -n kubox-system port-forward svc/sandbox-router-svc 18080:8080`)");
  }
  if (!opts.token) throw new ConfigError("no token: give a claim token (`kubox token <claim>`) or another token the router accepts");
  return { router, ns: opts.namespace ?? "default" };
}

/** envVar is the environment variable's value where there is an environment (Node, Deno, Bun). */
function envVar(name: string): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
}

/** KeepAlive is a running Sandbox.keepAlive; stop it when the work is done. */
export class KeepAlive {
  #timer: ReturnType<typeof setInterval> | undefined;
  #failure: Error | undefined = undefined;
  #inFlight: Promise<void> = Promise.resolve();

  /** @internal Sandbox.keepAlive makes KeepAlives. */
  constructor(touch: () => Promise<void>, intervalMs: number) {
    const tick = () => {
      this.#inFlight = touch().catch((e: unknown) => {
        if (e instanceof Error && isFinal(e)) {
          this.#failure = e;
          clearInterval(this.#timer);
        }
      });
    };
    tick();
    this.#timer = setInterval(tick, intervalMs);
    // In Node, a keep-alive alone does not hold the program open; elsewhere timers have no unref.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** stop ends the keep-alive; it throws the error that ended it early, if one did. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#inFlight;
    if (this.#failure) throw this.#failure;
  }
}

/** isFinal says whether keepAlive stops after e: the sandbox is gone or the token is refused. */
function isFinal(e: unknown): boolean {
  const status = (e as { status?: unknown }).status;
  return status === 401 || status === 403 || status === 404;
}
