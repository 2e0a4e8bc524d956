// A real kubox-agent for the tests, on 127.0.0.1 with a random token and a temporary root: the
// binary from $KUBOX_AGENT_BIN, or built from the repository with `go build` once per test process.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository: sdk/typescript/dist/test is four levels below it. */
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** built is the binary agentBinary built in this process, once. */
let built: string | undefined;

/**
 * agentBinary builds kubox-agent from the checkout into dist/test/bin, once per test process and
 * always (go build leaves an up-to-date binary alone, so this is cheap): a binary left by an
 * earlier run is never tested in place of the code.
 */
export function agentBinary(): string {
  const fromEnv = process.env.KUBOX_AGENT_BIN;
  if (fromEnv) return fromEnv;
  if (built) return built;
  const out = join(dirname(fileURLToPath(import.meta.url)), "bin", "kubox-agent");
  mkdirSync(dirname(out), { recursive: true });
  execFileSync("go", ["build", "-o", out, "./cmd/kubox-agent"], { cwd: repo, stdio: "inherit" });
  built = out;
  return out;
}

/** freePort is a TCP port free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? ok(addr.port) : fail(new Error("no port"))));
    });
  });
}

/** LocalAgent is a kubox-agent process serving a temporary root on 127.0.0.1. */
export class LocalAgent {
  readonly token = randomBytes(32).toString("hex");
  readonly dir = mkdtempSync(join(tmpdir(), "kubox-ts-"));
  readonly root = join(this.dir, "root");
  url = "";
  #proc: ChildProcess | undefined;
  #stderr = "";

  static async start(): Promise<LocalAgent> {
    const a = new LocalAgent();
    await a.#start();
    return a;
  }

  async #start(): Promise<void> {
    mkdirSync(this.root);
    const tokenFile = join(this.dir, "token");
    writeFileSync(tokenFile, this.token);
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    const proc = spawn(agentBinary(), ["--host", "127.0.0.1", "--port", String(port), "--compat-port", "0",
      "--token-file", tokenFile, "--root", this.root, "--shutdown-grace", "1s"], { stdio: ["ignore", "ignore", "pipe"] });
    this.#proc = proc;
    proc.stderr?.on("data", (d: Buffer) => (this.#stderr += d.toString()));
    const deadline = Date.now() + 30_000;
    while (!(await canConnect(port))) {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`kubox-agent did not start: ${this.#stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** stop ends the agent (by its pid) and removes its directory. */
  async stop(): Promise<void> {
    const proc = this.#proc;
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      ok(true);
    });
    s.once("error", () => ok(false));
  });
}
