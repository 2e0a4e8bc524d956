// The files of a sandbox: contents over the agent's plain HTTP /files/<path> (streamed both ways,
// atomic writes), metadata and watches over its FilesystemService. Paths are the sandbox's: with
// an agent root (--root), inside it.

import { timestampDate } from "@bufbuild/protobuf/wkt";

import { callError, ConfigError, KuboxError, NotFoundError } from "./errors.js";
import { type FileEntry, FileEventType, FileType, type WatchResponse } from "./gen/kubox/agent/v1/filesystem_pb.js";
import { type Endpoint, fixedBody, readBytes, streamChunks } from "./transport.js";

/** A file, directory or link in a sandbox. */
export interface FileInfo {
  /** The last element of path. */
  name: string;
  /** The absolute path in the sandbox. */
  path: string;
  type: "file" | "directory" | "symlink" | "other";
  /** Size in bytes. */
  size: number;
  /** Permission bits (0o644). */
  mode: number;
  /** When the content last changed; undefined when the agent did not say. */
  modified: Date | undefined;
  /** What a symbolic link points to; "" otherwise. */
  symlinkTarget: string;
  isDir: boolean;
}

/** A change a watch reports. */
export interface FileEvent {
  /** The changed file's path in the sandbox. */
  path: string;
  op: "create" | "write" | "remove" | "rename" | "chmod" | "unknown";
}

/** What write takes: text, bytes, or a stream of them (a Node Readable, a web ReadableStream). */
export type WriteData = string | Uint8Array | AsyncIterable<Uint8Array | string> | ReadableStream<Uint8Array>;

/** Options of the calls on files. */
export interface CallOptions {
  /** Ends the call. */
  signal?: AbortSignal;
}

const fileTypes: Record<FileType, FileInfo["type"]> = {
  [FileType.UNSPECIFIED]: "other",
  [FileType.FILE]: "file",
  [FileType.DIRECTORY]: "directory",
  [FileType.SYMLINK]: "symlink",
  [FileType.OTHER]: "other",
};

const eventOps: Record<FileEventType, FileEvent["op"]> = {
  [FileEventType.UNSPECIFIED]: "unknown",
  [FileEventType.CREATE]: "create",
  [FileEventType.WRITE]: "write",
  [FileEventType.REMOVE]: "remove",
  [FileEventType.RENAME]: "rename",
  [FileEventType.CHMOD]: "chmod",
};

/** fileInfo is the SDK's description of an agent FileEntry. */
export function fileInfo(e: FileEntry | undefined): FileInfo {
  const type = fileTypes[e?.type ?? FileType.UNSPECIFIED];
  return {
    name: e?.name ?? "",
    path: e?.path ?? "",
    type,
    size: Number(e?.size ?? 0n),
    mode: e?.mode ?? 0,
    modified: e?.modifiedTime ? timestampDate(e.modifiedTime) : undefined,
    symlinkTarget: e?.symlinkTarget ?? "",
    isDir: type === "directory",
  };
}

/**
 * LocalFiles is the local file system download and upload use: Node's (files-node.ts) in
 * @kubox/sdk; none in @kubox/sdk/web, where a program has no paths to give.
 */
export interface LocalFiles {
  /** write streams data into the local file dest. */
  write(dest: string, data: AsyncIterable<Uint8Array>): Promise<void>;
  /** read streams the local file src. */
  read(src: string): AsyncIterable<Uint8Array>;
}

/** Files reads, writes, lists and watches the files of a sandbox. */
export class Files {
  readonly #endpoint: () => Promise<Endpoint>;
  readonly #sandbox: string;
  readonly #local: LocalFiles | undefined;

  /** @internal Sandbox.files is the way to one. */
  constructor(endpoint: () => Promise<Endpoint>, sandbox: string, local?: LocalFiles) {
    this.#endpoint = endpoint;
    this.#sandbox = sandbox;
    this.#local = local;
  }

  #localFiles(method: string): LocalFiles {
    if (!this.#local) {
      throw new ConfigError(`files.${method} moves a local file, and @kubox/sdk/web has no file system: use files.read, stream or write`);
    }
    return this.#local;
  }

  #about(path: string, what = "file"): string {
    return `${what} ${path} in ${this.#sandbox}`;
  }

  /** read returns the file's contents. */
  async read(path: string, opts: CallOptions = {}): Promise<Uint8Array> {
    const body = await this.#get(path, opts);
    try {
      return await readBytes(body);
    } catch (e) {
      throw callError(e, this.#about(path));
    }
  }

  /** readText returns the file's contents decoded as UTF-8. */
  async readText(path: string, opts: CallOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.read(path, opts));
  }

  /** stream returns the file's contents as they arrive, for files of any size. */
  async stream(path: string, opts: CallOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    return this.#get(path, opts);
  }

  /** download streams the file into the local file dest and returns how many bytes it wrote. */
  async download(path: string, dest: string, opts: CallOptions = {}): Promise<number> {
    const local = this.#localFiles("download");
    const body = await this.#get(path, opts);
    let n = 0;
    const counted = async function* (): AsyncIterable<Uint8Array> {
      for await (const chunk of body) {
        n += chunk.length;
        yield chunk;
      }
    };
    try {
      await local.write(dest, counted());
    } catch (e) {
      throw callError(e, this.#about(path));
    }
    return n;
  }

  /**
   * write streams data into the file, atomically (readers see the old or the new contents),
   * creating its parent directories. Without mode a replaced file keeps its mode and a new one
   * gets 0644.
   */
  async write(path: string, data: WriteData, opts: CallOptions & { mode?: number } = {}): Promise<void> {
    const ep = await this.#endpoint();
    const header = new Headers({ "Content-Type": "application/octet-stream" });
    let body: AsyncIterable<Uint8Array>;
    if (typeof data === "string" || data instanceof Uint8Array) {
      const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
      header.set("Content-Length", String(bytes.length));
      body = fixedBody(bytes);
    } else {
      body = chunks(data);
    }
    const query = opts.mode ? "mode=" + (opts.mode & 0o7777).toString(8) : "";
    try {
      const res = await ep.content({ method: "PUT", path, query, header, body, signal: opts.signal }, this.#about(path));
      await readBytes(res.body);
    } catch (e) {
      throw callError(e, this.#about(path));
    }
  }

  /** upload streams the local file src into the sandbox's file path, as write. */
  async upload(src: string, path: string, opts: CallOptions & { mode?: number } = {}): Promise<void> {
    await this.write(path, this.#localFiles("upload").read(src), opts);
  }

  /** stat describes the file; a final symbolic link is described itself, not followed. */
  async stat(path: string, opts: CallOptions = {}): Promise<FileInfo> {
    const res = await this.#call(this.#about(path), (ep) => ep.files.stat({ path }, opts));
    return fileInfo(res.entry);
  }

  /** exists says whether the path exists (as a file, directory or link). */
  async exists(path: string, opts: CallOptions = {}): Promise<boolean> {
    try {
      await this.stat(path, opts);
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }

  /** list describes the entries of the directory, sorted by path; depth 2 and more go into subdirectories. */
  async list(path = ".", opts: CallOptions & { depth?: number } = {}): Promise<FileInfo[]> {
    const res = await this.#call(this.#about(path, "directory"), (ep) => ep.files.list({ path, depth: opts.depth ?? 1 }, opts));
    return res.entries.map(fileInfo);
  }

  /** makeDir creates the directory and its missing parents; an existing directory is a success. */
  async makeDir(path: string, opts: CallOptions = {}): Promise<FileInfo> {
    const res = await this.#call(this.#about(path, "directory"), (ep) => ep.files.makeDir({ path, parents: true }, opts));
    return fileInfo(res.entry);
  }

  /** remove deletes the file, link or empty directory; with recursive, a directory and all in it. */
  async remove(path: string, opts: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    await this.#call(this.#about(path), (ep) => ep.files.remove({ path, recursive: opts.recursive ?? false }, opts));
  }

  /** move renames src to dst (not into dst); with overwrite an existing dst is replaced. */
  async move(src: string, dst: string, opts: CallOptions & { overwrite?: boolean } = {}): Promise<FileInfo> {
    const res = await this.#call(this.#about(src), (ep) =>
      ep.files.move({ source: src, destination: dst, overwrite: opts.overwrite ?? false }, opts));
    return fileInfo(res.entry);
  }

  /**
   * watch reports changes in the directory (with recursive, below it too). It returns once the
   * agent watches, so every change made after it returns is reported. Iterate the FileWatch for
   * the events; close it (or abort opts.signal) to stop. A watch that ends for another reason
   * throws from the iteration: NotFoundError when the directory was removed.
   */
  async watch(path: string, opts: CallOptions & { recursive?: boolean } = {}): Promise<FileWatch> {
    const about = this.#about(path, "directory");
    const ep = await this.#endpoint();
    const abort = new AbortController();
    const signal = opts.signal ? AbortSignal.any([abort.signal, opts.signal]) : abort.signal;
    const it = ep.files.watch({ directory: path, recursive: opts.recursive ?? false }, { signal })[Symbol.asyncIterator]();
    let first: IteratorResult<WatchResponse>;
    try {
      first = await it.next();
    } catch (e) {
      abort.abort();
      throw callError(e, about);
    }
    if (first.done || first.value.message.case !== "started") {
      abort.abort();
      throw new KuboxError(`${about}: the agent did not start the watch`);
    }
    return new FileWatch(it, abort, signal, about);
  }

  async #get(path: string, opts: CallOptions): Promise<AsyncIterable<Uint8Array>> {
    const ep = await this.#endpoint();
    try {
      const res = await ep.content({ method: "GET", path, header: new Headers(), signal: opts.signal }, this.#about(path));
      return res.body;
    } catch (e) {
      throw callError(e, this.#about(path));
    }
  }

  async #call<T>(about: string, fn: (ep: Endpoint) => Promise<T>): Promise<T> {
    const ep = await this.#endpoint();
    try {
      return await fn(ep);
    } catch (e) {
      throw callError(e, about);
    }
  }
}

/** chunks is a stream of data as the byte chunks of a request body. */
async function* chunks(data: AsyncIterable<Uint8Array | string> | ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const it: AsyncIterable<Uint8Array | string> = data instanceof ReadableStream ? streamChunks(data) : data;
  for await (const c of it) {
    yield typeof c === "string" ? new TextEncoder().encode(c) : c;
  }
}

/** FileWatch is a running watch: iterate it for the changes, close it to stop. */
export class FileWatch implements AsyncIterable<FileEvent> {
  readonly #it: AsyncIterator<WatchResponse>;
  readonly #abort: AbortController;
  readonly #signal: AbortSignal;
  readonly #about: string;

  /** @internal Files.watch makes FileWatches. */
  constructor(it: AsyncIterator<WatchResponse>, abort: AbortController, signal: AbortSignal, about: string) {
    this.#it = it;
    this.#abort = abort;
    this.#signal = signal;
    this.#about = about;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<FileEvent> {
    try {
      for (;;) {
        let r: IteratorResult<WatchResponse>;
        try {
          r = await this.#it.next();
        } catch (e) {
          if (this.#signal.aborted) return;
          throw callError(e, this.#about);
        }
        if (r.done) {
          if (this.#signal.aborted) return;
          throw new KuboxError(`${this.#about}: the agent ended the watch`);
        }
        if (r.value.message.case === "event") {
          const ev = r.value.message.value;
          yield { path: ev.path, op: eventOps[ev.type] };
        }
      }
    } finally {
      this.#abort.abort();
    }
  }

  /** close stops the watch. */
  close(): void {
    this.#abort.abort();
  }
}
