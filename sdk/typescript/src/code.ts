// The sandbox's code interpreter (E2B's code-interpreter wire, which kubox-agent serves on port
// 49999): runCode streams POST /execute's NDJSON answer; contexts are created, listed, restarted
// and removed under /contexts. The JSON names are the wire's.

import { type Endpoint } from "./transport.js";
import { KuboxError, SandboxConnectionError } from "./errors.js";

/** A language of the code interpreter. */
export type CodeLanguage = "python" | "javascript" | "bash";

/** A context: one interpreter whose variables, imports and working directory last between runs. */
export interface CodeContext {
  id: string;
  language: string;
  cwd: string;
}

/** One result of an execution, as E2B's MIME bundle; png, jpeg and pdf are base64. */
export interface CodeResult {
  text?: string;
  html?: string;
  markdown?: string;
  svg?: string;
  png?: string;
  jpeg?: string;
  pdf?: string;
  latex?: string;
  json?: unknown;
  javascript?: string;
  /** True for the value of the code's last expression. */
  isMainResult: boolean;
}

/** An exception the code raised; the context lives on. */
export interface ExecutionError {
  name: string;
  value: string;
  traceback: string;
}

/**
 * What runCode keeps of an execution, so that code printing without end cannot exhaust the
 * caller's memory (the Go SDK's DefaultCodeOutputBytes): the first 1 MiB of stdout and of stderr
 * each, in UTF-8 (as much as the agent keeps of a command's output by default), cut at a
 * character.
 */
export const defaultCodeOutputBytes = 1 << 20;
/**
 * Results are kept while their total, as the wire sends them (images in base64), stays within
 * 32 MiB, the one result the code interpreter sends at most (the Go SDK's DefaultCodeResultBytes);
 * one that does not fit is dropped whole. The callbacks still get everything.
 */
export const defaultCodeResultBytes = 32 << 20;

/** The outcome of runCode: an exception in the code is `error`, not a rejection. */
export interface Execution {
  /** The results kept (see defaultCodeResultBytes); onResult got every one. */
  results: CodeResult[];
  /** What the code printed, the first defaultCodeOutputBytes of each stream; onStdout and onStderr got all of it. */
  logs: { stdout: string[]; stderr: string[] };
  error?: ExecutionError;
  executionCount: number;
  /** The main result's text, if any. */
  text?: string;
  /** The stream was longer than what logs keeps. */
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Results were dropped: their total passed defaultCodeResultBytes. */
  resultsTruncated: boolean;
}

export interface RunCodeOptions {
  /** The default context of this language (default python); not with context. */
  language?: CodeLanguage;
  /** A context from createCodeContext. */
  context?: CodeContext;
  /** Environment variables for this run only. */
  envs?: Record<string, string>;
  /** Interrupts the code after this long (the context keeps its state) and rejects. */
  timeoutMs?: number;
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  onResult?: (result: CodeResult) => void;
  signal?: AbortSignal;
}

/** runCode runs code on ep's code interpreter, reading the answer as it streams. */
export async function runCode(ep: Endpoint, code: string, opts: RunCodeOptions, object: string): Promise<Execution> {
  if (opts.context && opts.language) {
    throw new KuboxError(`runCode in ${object}: give context or language, not both (a context has its own language)`);
  }
  const body: Record<string, unknown> = { code };
  if (opts.context) body.context_id = opts.context.id;
  else if (opts.language) body.language = opts.language;
  if (opts.envs) body.env_vars = opts.envs;
  const signals = [opts.signal, opts.timeoutMs ? AbortSignal.timeout(opts.timeoutMs) : undefined].filter((s): s is AbortSignal => !!s);
  const signal = signals.length ? AbortSignal.any(signals) : undefined;
  const about = `code interpreter of ${object}`;
  const ex: Execution = { results: [], logs: { stdout: [], stderr: [] }, executionCount: 0, stdoutTruncated: false, stderrTruncated: false, resultsTruncated: false };
  const kept: Kept = { stdout: 0, stderr: 0, results: 0 };
  try {
    const res = await ep.code({ method: "POST", path: "/execute", body: JSON.stringify(body), signal }, about);
    const dec = new TextDecoder();
    let pending = "";
    for await (const chunk of res.body) {
      pending += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line && message(ex, kept, line, opts)) return ex;
      }
    }
  } catch (e) {
    if (opts.timeoutMs && signal?.aborted && !opts.signal?.aborted) {
      throw new KuboxError(`runCode in ${object} did not end within its timeout (${opts.timeoutMs} ms): the code interpreter interrupted it and the context keeps its state; raise timeoutMs`);
    }
    throw e;
  }
  throw new SandboxConnectionError(`${about}: the answer ended before end_of_execution`);
}

/** The bytes of an Execution's logs and results so far. */
export interface Kept { stdout: number; stderr: number; results: number }

const utf8 = new TextEncoder();

/** keepText appends what fits of text to pieces within defaultCodeOutputBytes (kept bytes so far), cut at a character; the new count, and whether text was cut. */
function keepText(pieces: string[], text: string, kept: number): [number, boolean] {
  const b = utf8.encode(text);
  let room = defaultCodeOutputBytes - kept;
  const cut = b.length > room;
  if (cut) {
    while (room > 0 && (b[room] & 0xc0) === 0x80) room--;
    text = new TextDecoder().decode(b.subarray(0, room));
  }
  if (text) pieces.push(text);
  return [kept + (cut ? room : b.length), cut];
}

/** message adds one message (a line of the answer) to ex, within the bounds; true at end_of_execution. */
export function message(ex: Execution, kept: Kept, line: string, opts: RunCodeOptions): boolean {
  const m = JSON.parse(line) as Record<string, unknown>;
  const text = typeof m.text === "string" ? m.text : "";
  let cut: boolean;
  switch (m.type) {
    case "stdout":
      [kept.stdout, cut] = keepText(ex.logs.stdout, text, kept.stdout);
      ex.stdoutTruncated ||= cut;
      opts.onStdout?.(text);
      break;
    case "stderr":
      [kept.stderr, cut] = keepText(ex.logs.stderr, text, kept.stderr);
      ex.stderrTruncated ||= cut;
      opts.onStderr?.(text);
      break;
    case "result": {
      const r: CodeResult = { isMainResult: m.is_main_result === true };
      for (const k of ["text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "javascript"] as const) {
        const v = m[k];
        if (typeof v === "string") r[k] = v;
      }
      if (m.json !== undefined) r.json = m.json;
      const size = utf8.encode(line).length;
      if (kept.results + size <= defaultCodeResultBytes) {
        kept.results += size;
        ex.results.push(r);
        if (r.isMainResult) ex.text = r.text;
      } else {
        ex.resultsTruncated = true;
      }
      opts.onResult?.(r);
      break;
    }
    case "error":
      ex.error = { name: str(m.name), value: str(m.value), traceback: str(m.traceback) };
      break;
    case "number_of_executions":
      ex.executionCount = Number(m.execution_count ?? 0);
      break;
    case "end_of_execution":
      return true;
  }
  return false;
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** contextsCall makes a call of /contexts and returns the answer's JSON (undefined when empty). */
export async function contextsCall(ep: Endpoint, method: string, path: string, object: string, body?: unknown, signal?: AbortSignal): Promise<unknown> {
  const res = await ep.code({ method, path, body: body === undefined ? undefined : JSON.stringify(body), signal }, `code interpreter of ${object}`);
  let text = "";
  const dec = new TextDecoder();
  for await (const chunk of res.body) text += dec.decode(chunk, { stream: true });
  return text.trim() ? JSON.parse(text) : undefined;
}
