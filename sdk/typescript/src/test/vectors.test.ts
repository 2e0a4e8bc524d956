// The SDK's copies of the contract and of the API's lifecycle rules, checked against the vectors
// generated from api/ and the Go SDK (sdk/testdata/contract-vectors.json, `make vectors`): a key,
// reason or claim field that drifts from its home fails here.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import * as client from "../client.js";
import * as code from "../code.js";
import { ClaimFailedError, SandboxNotReadyError } from "../errors.js";
import { claims, type KubeObject, sandboxes } from "../kube.js";

interface StateVector { name: string; object: KubeObject; want: string; reason?: string }
interface ClaimCase { name: string; options: Record<string, unknown>; go: string[]; claim: KubeObject & { metadata: { labels: Record<string, string> } } }
interface Vectors {
  constants: Record<string, unknown>;
  claimTerminalReasons: string[];
  sandboxTerminalReasons: string[];
  claimReadiness: StateVector[];
  sandboxReadiness: StateVector[];
  sandboxSuspension: StateVector[];
  buildClaim: { now: string; namespace: string; instants: string[][]; durations: string[][]; cases: ClaimCase[] };
}

// dist/test/ -> sdk/testdata/
const vectors = JSON.parse(readFileSync(new URL("../../../testdata/contract-vectors.json", import.meta.url), "utf8")) as Vectors;

// Each vector constant and the SDK's copy of it.
const constants: Record<string, () => unknown> = {
  sandboxGroup: () => sandboxes.group,
  extensionsGroup: () => claims.group,
  version: () => claims.version,
  createdByLabel: () => client.createdByLabel,
  createdByTypeScript: () => client.createdBy,
  clientFirstRequestedAtAnnotation: () => client.firstRequestedAtAnnotation,
  forkOfLabel: () => client.forkOfLabel,
  claimGenerateName: () => client.claimGenerateName,
  agentTokenSecretKey: () => client.agentTokenKey,
  agentSecretName: () => ({ sandbox: "python-x7k2q", secret: client.agentSecretName("python-x7k2q") }),
  defaultRouterPort: () => client.defaultRouterPort,
  defaultRouterNamespace: () => client.defaultRouterNamespace,
  defaultRouterService: () => client.defaultRouterService,
  routerURLEnv: () => client.routerURLEnv,
  routerKubeconfigExtension: () => client.routerExtension,
  defaultCodeOutputBytes: () => code.defaultCodeOutputBytes,
  defaultCodeResultBytes: () => code.defaultCodeResultBytes,
};
// The vector constants this SDK has no copy of (another SDK's value, or a key it does not use).
const notRetyped = ["createdByPython", "defaultAgentPort", "authorizationHeader", "bearerScheme"];

// Each ClaimSource and ClaimOptions key and the vectors' neutral option it is (Go: FromPool,
// FromTemplate, WithName, InNamespace, WithTTL, WithEnv, WithLabels, WithPodLabels,
// WithPodAnnotations, WithSuspendAfter, WithIdlePolicy, WithAllowDomains, WithEgress,
// WithSnapshot), or why it is not a claim option. The Records are over every key of the types, so
// a key added to or dropped from ClaimSource or ClaimOptions without changing these fails to compile.
type OptionMap = { vector: string; value?: (v: unknown) => unknown } | { notAnOption: string };
const ms = (v: unknown) => (v as number) * 1000;
const sourceKeys: Record<keyof client.ClaimSource, OptionMap> = { pool: { vector: "pool" }, template: { vector: "template" } };
const optionKeys: Record<keyof client.ClaimOptions, OptionMap> = {
  namespace: { vector: "namespace" },
  name: { vector: "name" },
  ttlMs: { vector: "ttlSeconds", value: ms },
  env: { vector: "env" },
  labels: { vector: "labels" },
  podLabels: { vector: "podLabels" },
  podAnnotations: { vector: "podAnnotations" },
  suspendAfterMs: { vector: "suspendAfterSeconds", value: ms },
  idlePolicy: { vector: "idlePolicy" },
  allowDomains: { vector: "allowDomains" },
  denyDomains: { vector: "denyDomains" },
  denyCIDRs: { vector: "denyCIDRs" },
  snapshot: { vector: "snapshot" },
  onProgress: { notAnOption: "claim calls it while it waits" },
};

/** tsOption is the ClaimSource ("source.pool") or ClaimOptions key of the vectors' option, and its mapping. */
function tsOption(vector: string): [string, { vector: string; value?: (v: unknown) => unknown }] | undefined {
  for (const [prefix, keys] of [["source.", sourceKeys], ["", optionKeys]] as const) {
    for (const [key, m] of Object.entries(keys)) {
      if ("vector" in m && m.vector === vector) return [prefix + key, m];
    }
  }
  return undefined;
}

/** outcome is what fn says of obj, as the vectors write it: [ok], ["waiting"] or ["terminal", reason]. */
function outcome(fn: (o: KubeObject) => boolean, obj: KubeObject, ok: string): string[] {
  try {
    return [fn(structuredClone(obj)) ? ok : "waiting"];
  } catch (e) {
    if (e instanceof ClaimFailedError) return ["terminal", e.reason];
    if (e instanceof SandboxNotReadyError) return ["terminal", ...vectors.sandboxTerminalReasons.filter((r) => e.message.includes(`: ${r}: `))];
    throw e;
  }
}

const want = (v: StateVector): string[] => (v.reason ? [v.want, v.reason] : [v.want]);

describe("contract vectors", () => {
  test("every constant is checked", () => {
    assert.deepEqual(Object.keys(vectors.constants).sort(), [...Object.keys(constants), ...notRetyped].sort());
  });
  for (const [key, copy] of Object.entries(constants)) {
    test(`constant ${key}`, () => assert.deepEqual(copy(), vectors.constants[key], `${key}: the SDK's copy differs from api/`));
  }
  test("terminal reasons", () => {
    assert.deepEqual([...client.claimTerminalReasons].sort(), [...vectors.claimTerminalReasons].sort());
    assert.deepEqual([...client.sandboxTerminalReasons].sort(), [...vectors.sandboxTerminalReasons].sort());
  });
  for (const v of vectors.claimReadiness) {
    test(`claim readiness: ${v.name}`, () => assert.deepEqual(outcome(client.claimState, v.object, "ready"), want(v)));
  }
  for (const v of vectors.sandboxReadiness) {
    test(`sandbox readiness: ${v.name}`, () => assert.deepEqual(outcome(client.sandboxReady, v.object, "ready"), want(v)));
  }
  for (const v of vectors.sandboxSuspension) {
    test(`sandbox suspension: ${v.name}`, () => assert.deepEqual(outcome(client.sandboxSuspended, v.object, "done"), want(v)));
  }
  for (const [prefix, keys] of [["source.", sourceKeys], ["", optionKeys]] as const) {
    for (const [key, m] of Object.entries(keys)) {
      if (!("vector" in m)) continue;
      test(`claim option ${prefix}${key} has a case`, () => {
        assert.ok(vectors.buildClaim.cases.some((c) => m.vector in c.options),
          `${prefix}${key} (the vectors' option ${m.vector}) has no vector case: add a case that sets it to claimCases in hack/vectors/claims.go, then make vectors`);
      });
    }
  }
  for (const v of vectors.buildClaim.cases) {
    test(`build claim: ${v.name}`, () => {
      const source: Record<string, unknown> = {};
      const opts: Record<string, unknown> = { namespace: vectors.buildClaim.namespace };
      for (const [k, val] of Object.entries(v.options)) {
        const found = tsOption(k);
        if (!found) {
          assert.fail(`case ${JSON.stringify(v.name)}: option ${k}: ClaimSource/ClaimOptions has none for it (the Go SDK's: ${v.go.join(", ")}); ` +
            "add it to ClaimOptions and buildClaim, and map it in optionKeys");
        }
        const [field, m] = found;
        const value = m.value ? m.value(val) : val;
        if (field.startsWith("source.")) source[field.slice("source.".length)] = value;
        else opts[field] = value;
      }
      const got = client.buildClaim(source as client.ClaimSource, opts as unknown as client.ClaimOptions & { namespace: string }, new Date(vectors.buildClaim.now));
      const expected = structuredClone(v.claim);
      expected.metadata.labels[client.createdByLabel] = client.createdBy;
      assert.deepEqual(normalized(got), normalized(expected));
    });
  }
});

/** goDurationSeconds is a Go duration ("1h30m0s", "600s") in seconds. */
function goDurationSeconds(s: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3 };
  const parts = [...s.matchAll(/([0-9.]+)(ms|h|m|s)/g)];
  assert.equal(parts.map((p) => p[0]).join(""), s, `${s} is not a Go duration`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * (units[p[2] ?? ""] ?? NaN), 0);
}

/** normalized is obj with its times as instants and its durations as seconds (the vectors' instants, durations). */
function normalized(obj: KubeObject): unknown {
  const out = structuredClone(obj) as unknown as Record<string, unknown>;
  const rewrite = (paths: string[][], parse: (s: string) => number) => {
    for (const path of paths) {
      let node: Record<string, unknown> | undefined = out;
      for (const key of path.slice(0, -1)) node = node?.[key] as Record<string, unknown> | undefined;
      const last = path[path.length - 1] ?? "";
      if (node && typeof node[last] === "string") node[last] = parse(node[last]);
    }
  };
  rewrite(vectors.buildClaim.instants, (s) => new Date(s).getTime());
  rewrite(vectors.buildClaim.durations, goDurationSeconds);
  return out;
}
