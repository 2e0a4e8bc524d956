// Processes in a sandbox: run to completion (RunProcess) or started and followed (StartProcess,
// AttachProcess), with stdin, signals and terminals. The semantics are the Go SDK's
// (sdk/go/kubox/process.go): flow control, so the agent holds the process back rather than drop
// output a slow reader has not taken; a broken stream is followed again from the last byte seen.

import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";

import { callError, ConfigError, KuboxError } from "./errors.js";
import {
  OutputStream,
  type ProcessEvent as PbProcessEvent,
  type ProcessExit,
  type ProcessOutput,
  type ProcessSpec,
  ProcessSpecSchema,
  type RunProcessResponse,
} from "./gen/kubox/agent/v1/process_pb.js";
import type { Endpoint } from "./transport.js";

/** stdinChunk is the most stdin one SendInput call carries (the agent takes up to 8 MiB). */
const stdinChunk = 64 << 10;

/** reattachLimit is how many times a Process follows its process again after its stream broke. */
const reattachLimit = 3;

/** A command: a shell line ("ls -l | wc -l", run by /bin/sh -c) or a program and its arguments. */
export type Command = string | readonly string[];

/** Which stream output came from; "pty" for a process on a terminal. */
export type Stream = "stdout" | "stderr" | "pty";

/** Options of Sandbox.run and Sandbox.start. */
export interface CommandOptions {
  /** Environment variables set on top of the sandbox container's. */
  env?: Record<string, string>;
  /** The working directory; it must exist. Default: the agent's. */
  cwd?: string;
  /** When positive, the agent kills the process group once it has run this many milliseconds. */
  timeoutMs?: number;
  /** A free-form label ListProcesses shows. */
  tag?: string;
  /** Ends the call: run's process is killed by the agent, start's process gets SIGKILL. */
  signal?: AbortSignal;
}

/** Options of Sandbox.run. */
export interface RunOptions extends CommandOptions {
  /** Written to the process's stdin, which is then closed. */
  stdin?: string | Uint8Array;
  /** Throw CommandError when the command exits with a non-zero status. */
  check?: boolean;
  /** How much of each of stdout and stderr is returned; default the agent's (1 MiB). */
  maxOutputBytes?: number;
}

/** What start copies to a process's stdin. */
export type StdinSource = boolean | string | Uint8Array | AsyncIterable<Uint8Array | string>;

/** Options of Sandbox.start. */
export interface StartOptions extends CommandOptions {
  /**
   * true keeps stdin open for sendInput; a string or bytes are written and stdin closed; an async
   * iterable (a Node Readable, say) is copied in the background, then stdin is closed. Default:
   * stdin reads EOF at once.
   */
  stdin?: StdinSource;
  /** Runs the process on a terminal of this size; its output then comes as "pty". */
  tty?: TTYSize;
  /** Called with each piece of stdout (or terminal output) as it is read. */
  onStdout?: (data: OutputEvent) => void | Promise<void>;
  /** Called with each piece of stderr as it is read. */
  onStderr?: (data: OutputEvent) => void | Promise<void>;
}

/** The size of a terminal in character cells. */
export interface TTYSize {
  rows: number;
  cols: number;
}

/** The outcome of a command run to completion. A non-zero exitCode is not an error. */
export interface CommandResult {
  /** The exit status; 128+n when signal n killed the process (as a shell reports it). */
  exitCode: number;
  /** Standard output as text (UTF-8, undecodable bytes replaced), up to the agent's limit. */
  stdout: string;
  /** Standard error as text. */
  stderr: string;
  /** The bytes as the process wrote them. */
  stdoutBytes: Uint8Array;
  stderrBytes: Uint8Array;
  /** True when the process wrote more than is returned. */
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** The signal that killed the process ("SIGKILL"); "" when it exited. */
  signal: string;
  /** True when the agent killed the process because timeoutMs passed. */
  timedOut: boolean;
}

/** Output a started process wrote. */
export interface OutputEvent {
  type: "output";
  stream: Stream;
  /** The bytes as the process wrote them. */
  data: Uint8Array;
  /** data decoded as UTF-8; a character split between two events is completed in the second. */
  text: string;
  /** Where data starts in its stream. */
  offset: number;
}

/** Output the agent could not keep for the reader. */
export interface DroppedEvent {
  type: "dropped";
  stream: Stream;
  offset: number;
  length: number;
}

/** The process ended; always the last event. */
export interface ExitEvent {
  type: "exit";
  exitCode: number;
  /** The signal that killed it ("SIGTERM"); "" when it exited. */
  signal: string;
  timedOut: boolean;
}

/** What iterating a Process yields. */
export type ProcessEvent = OutputEvent | DroppedEvent | ExitEvent;

/** processSpec is the agent's ProcessSpec for cmd and opts. */
export function processSpec(cmd: Command, opts: CommandOptions): ProcessSpec {
  const spec = create(ProcessSpecSchema, { env: opts.env ?? {}, cwd: opts.cwd ?? "", tag: opts.tag ?? "" });
  if (typeof cmd === "string") {
    if (!cmd.trim()) throw new ConfigError('the command is empty: give a shell line ("ls -l") or a program and its arguments (["ls", "-l"])');
    spec.shellCommand = cmd;
  } else {
    if (cmd.length === 0) throw new ConfigError('the command has no program: give e.g. ["python3", "-V"] or a shell line');
    spec.argv = [...cmd];
  }
  if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
    const ms = Math.round(opts.timeoutMs);
    spec.timeout = create(DurationSchema, { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 });
  }
  return spec;
}

const decoder = new TextDecoder();

/** resultOf is the CommandResult of a RunProcess answer. */
export function resultOf(m: RunProcessResponse): CommandResult {
  return {
    exitCode: m.exit?.exitCode ?? 0,
    stdout: decoder.decode(m.stdout),
    stderr: decoder.decode(m.stderr),
    stdoutBytes: m.stdout,
    stderrBytes: m.stderr,
    stdoutTruncated: m.stdoutTruncated,
    stderrTruncated: m.stderrTruncated,
    signal: m.exit?.signal ?? "",
    timedOut: m.exit?.timedOut ?? false,
  };
}

function streamName(s: OutputStream): Stream {
  switch (s) {
    case OutputStream.STDERR:
      return "stderr";
    case OutputStream.PTY:
      return "pty";
    default:
      return "stdout";
  }
}

function exitOf(e: ProcessExit): ExitEvent {
  return { type: "exit", exitCode: e.exitCode, signal: e.signal, timedOut: e.timedOut };
}

/** signalName is the agent's form of a signal: a name ("SIGTERM", "term") or a number. */
function signalName(sig: string | number): string {
  return typeof sig === "number" ? String(sig) : sig;
}

/**
 * Process is a process started with Sandbox.start. Its output is read by iterating it
 * (`for await (const ev of proc)`) or by wait(), which also calls onStdout/onStderr; with flow
 * control the agent holds the process back while nobody reads. Closing the stream (close())
 * does not stop the process: kill() does.
 */
export class Process implements AsyncIterable<ProcessEvent> {
  /** The agent's id of the process (not its pid). */
  readonly id: string;
  /** The process's pid in the sandbox. */
  readonly pid: number;
  /** The error that ended copying stdin, if one did. */
  stdinError: unknown = undefined;
  /** How the process ended, once it did. */
  exit: ExitEvent | undefined = undefined;

  readonly #ep: Endpoint;
  readonly #object: string;
  readonly #opts: StartOptions;
  readonly #abort: AbortController;
  readonly #events: AsyncGenerator<ProcessEvent>;
  readonly #decoders = new Map<Stream, InstanceType<typeof TextDecoder>>();
  readonly #next: Record<"stdout" | "stderr", bigint> = { stdout: 0n, stderr: 0n };
  #closed = false;

  /** @internal Sandbox.start makes Processes. */
  constructor(ep: Endpoint, object: string, started: { id: string; pid: number }, first: AsyncIterator<{ event?: PbProcessEvent }>,
    abort: AbortController, opts: StartOptions) {
    this.#ep = ep;
    this.id = started.id;
    this.pid = started.pid;
    this.#object = `process ${started.id} in ${object}`;
    this.#opts = opts;
    this.#abort = abort;
    this.#events = this.#follow(first);
    const stdin = opts.stdin;
    if (stdin !== undefined && typeof stdin !== "boolean") {
      this.#copyStdin(stdin).catch((e: unknown) => {
        this.stdinError = e;
      });
    }
  }

  toString(): string {
    return this.#object;
  }

  [Symbol.asyncIterator](): AsyncIterator<ProcessEvent> {
    return this.#events;
  }

  /**
   * wait reads the process's events until it exits (calling onStdout and onStderr) and returns
   * its exit code; 128+n when signal n killed it. A non-zero exit is not an error.
   */
  async wait(): Promise<number> {
    for await (const ev of this.#events) {
      if (ev.type === "exit") break;
    }
    if (!this.exit) throw new KuboxError(`${this.#object}: the stream was closed before the process exited`);
    return this.exit.exitCode;
  }

  /** sendInput writes to the process's stdin (start with stdin: true, or a terminal). */
  async sendInput(data: string | Uint8Array): Promise<void> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    for (let at = 0; at < bytes.length || at === 0; at += stdinChunk) {
      await this.#call(() => this.#ep.process.sendInput({ processId: this.id, data: bytes.subarray(at, at + stdinChunk) }));
      if (bytes.length === 0) break;
    }
  }

  /** closeInput closes stdin, so the process reads EOF (on a terminal, Ctrl-D is written). */
  async closeInput(): Promise<void> {
    await this.#call(() => this.#ep.process.sendInput({ processId: this.id, closeStdin: true }));
  }

  /** signal sends a signal ("SIGTERM", "INT", 9) to the process's process group. */
  async signal(sig: string | number): Promise<void> {
    await this.#call(() => this.#ep.process.sendSignal({ processId: this.id, signal: signalName(sig) }));
  }

  /** kill sends SIGKILL to the process group. */
  async kill(): Promise<void> {
    await this.signal("SIGKILL");
  }

  /** resize changes the size of the process's terminal; without a terminal it fails (HTTP 412). */
  async resize(rows: number, cols: number): Promise<void> {
    await this.#call(() => this.#ep.process.resizePty({ processId: this.id, size: { rows, cols } }));
  }

  /** close stops following the process; the process keeps running. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#abort.abort();
    await this.#events.return(undefined);
  }

  async #call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw callError(e, this.#object);
    }
  }

  async #copyStdin(src: Exclude<StdinSource, boolean>): Promise<void> {
    if (typeof src === "string" || src instanceof Uint8Array) {
      await this.sendInput(src);
    } else {
      for await (const chunk of src) {
        if (chunk.length > 0) await this.sendInput(chunk);
      }
    }
    await this.closeInput();
  }

  /** follow yields the process's events until it exits, attaching again when the stream breaks. */
  async *#follow(first: AsyncIterator<{ event?: PbProcessEvent }>): AsyncGenerator<ProcessEvent> {
    let stream = first;
    try {
      for (let attempt = 0; ; attempt++) {
        let broke: unknown = undefined;
        try {
          for (let r = await stream.next(); !r.done; r = await stream.next()) {
            for (const ev of this.#eventsOf(r.value.event)) {
              await this.#callback(ev);
              yield ev;
              if (ev.type === "exit") return;
            }
          }
        } catch (e) {
          broke = e;
        }
        if (this.#closed) return;
        if (this.#opts.signal?.aborted) {
          await this.kill().catch(() => undefined);
          throw callError(this.#opts.signal.reason ?? new DOMException("aborted", "AbortError"), this.#object);
        }
        if (attempt === reattachLimit) {
          throw callError(broke ?? new Error("the agent ended the stream before the process exited"), this.#object);
        }
        stream = this.#attach();
      }
    } finally {
      this.#abort.abort();
    }
  }

  #attach(): AsyncIterator<{ event?: PbProcessEvent }> {
    const req = { processId: this.id, stdoutOffset: this.#next.stdout, stderrOffset: this.#next.stderr, flowControl: true };
    return this.#ep.process.attachProcess(req, { signal: this.#abort.signal })[Symbol.asyncIterator]();
  }

  /** eventsOf turns an agent event into the SDK's, skipping output an earlier stream delivered. */
  #eventsOf(ev: PbProcessEvent | undefined): ProcessEvent[] {
    switch (ev?.event.case) {
      case "output":
        return this.#output(ev.event.value);
      case "dropped": {
        const d = ev.event.value;
        const key = d.stream === OutputStream.STDERR ? "stderr" : "stdout";
        const end = d.offset + d.length;
        if (end > this.#next[key]) this.#next[key] = end;
        return [{ type: "dropped", stream: streamName(d.stream), offset: Number(d.offset), length: Number(d.length) }];
      }
      case "exited":
        this.exit = exitOf(ev.event.value);
        return [this.exit];
    }
    return [];
  }

  #output(o: ProcessOutput): OutputEvent[] {
    const key = o.stream === OutputStream.STDERR ? "stderr" : "stdout";
    let data = o.data;
    const skip = this.#next[key] - o.offset;
    if (skip > 0n) {
      if (skip >= BigInt(data.length)) return [];
      data = data.subarray(Number(skip));
    }
    this.#next[key] = o.offset + BigInt(o.data.length);
    const stream = streamName(o.stream);
    let dec = this.#decoders.get(stream);
    if (!dec) {
      dec = new TextDecoder();
      this.#decoders.set(stream, dec);
    }
    const offset = Number(o.offset) + (o.data.length - data.length);
    return [{ type: "output", stream, data, text: dec.decode(data, { stream: true }), offset }];
  }

  async #callback(ev: ProcessEvent): Promise<void> {
    if (ev.type !== "output") return;
    const fn = ev.stream === "stderr" ? this.#opts.onStderr : this.#opts.onStdout;
    if (fn) await fn(ev);
  }
}
