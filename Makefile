# kubox — run `make help` for the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

export GOTOOLCHAIN ?= local
export GOFLAGS ?= -mod=mod

TOOLS          := hack/tools/install.sh
CONTROLLER_GEN  = $(shell $(TOOLS) dir controller-gen)/controller-gen
GOLANGCI_LINT   = $(shell $(TOOLS) dir golangci-lint)/golangci-lint
HELM            = $(shell $(TOOLS) dir helm)/helm
KUBECTL         = $(shell $(TOOLS) dir kubernetes)/kubectl
# buf, protoc-gen-go and protoc-gen-connect-go share one cache folder (hack/tools/buf).
BUF_DIR         = $(shell $(TOOLS) dir buf)
GO_TEST        ?= go test
# Generated paths: `make verify` fails when any of them differs from what `make generate manifests chart vectors layout` writes.
GENERATED      := api config/crd config/rbac proto charts/kubox sdk/typescript/src/gen sdk/testdata/contract-vectors.json docs/development.md
# The TypeScript SDK (@kubox/sdk) and the marker npm ci leaves in its node_modules.
TS_DIR         := sdk/typescript
TS_DEPS        := $(TS_DIR)/node_modules/.package-lock.json
# The repository's Go modules (each with its go.mod): the root module, the API types, the agent's generated
# wire code and the Go SDK. `go list ./...` in one does not see the others, so Go targets loop over them.
MODULES        := . api proto sdk/go
# in-modules runs a shell command in each of MODULES, stopping at the first that fails.
in-modules      = for m in $(MODULES); do echo "== module $$m"; (cd $$m && $(1)) || exit 1; done

##@ General
.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Build every pinned tool once into ~/.cache/kubox/tools (KUBOX_TOOLS_DIR overrides)
	$(TOOLS)

##@ Development
.PHONY: generate
generate: proto ## Generate deepcopy code for the API types and Go code from proto/
	$(TOOLS) controller-gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: proto
proto: $(TS_DEPS) ## Generate Go and TypeScript code from proto/ (buf, protoc-gen-go, protoc-gen-connect-go, protoc-gen-es)
	$(TOOLS) buf
	export PATH="$(BUF_DIR):$$PATH" && cd proto && buf lint && buf generate && buf generate --template buf.gen.ts.yaml

.PHONY: manifests
manifests: ## Generate CRDs and RBAC (controller, router) from the API types and the markers
	$(TOOLS) controller-gen
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=kubox-controller paths=./internal/controller/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=kubox-router paths=./internal/router/... output:rbac:artifacts:config=config/rbac/router
	$(CONTROLLER_GEN) rbac:roleName=kubox-egress paths=./internal/egress/... output:rbac:artifacts:config=config/rbac/egress

.PHONY: chart
chart: ## Generate the Helm chart charts/kubox from config/default (kustomize) and config/crd/bases
	$(TOOLS) kubernetes
	go run ./hack/chart -kubectl $(KUBECTL) -config config/default -node config/node -crds config/crd/bases -out charts/kubox

# Values a chart user changes most, rendered in verify on top of the defaults.
CHART_CHECK_VALUES := --set router.replicas=3 --set router.service.type=LoadBalancer \
	--set-string 'router.service.annotations.example\.com/internal=true' \
	--set controller.image.tag=v0.0.0-check --set agentTokenKey.existingSecret=my-key \
	--set 'router.extraArgs={--e2b-domain=e2b.example.com,--e2b-namespace=team-a}' \
	--set node.enabled=true --set 'node.extraArgs={--snapshot-store=/var/lib/kubox/snapshot-store}'

.PHONY: chart-lint
chart-lint: ## helm lint and helm template charts/kubox, with the default values and with CHART_CHECK_VALUES; hack/chart's render test
	$(TOOLS) kubernetes helm
	$(HELM) lint --strict charts/kubox
	$(HELM) lint --strict charts/kubox $(CHART_CHECK_VALUES)
	$(HELM) template kubox charts/kubox -n kubox-system --include-crds >/dev/null
	$(HELM) template kubox charts/kubox -n kubox-system $(CHART_CHECK_VALUES) >/dev/null
	@# Renders config/default with kubectl and the generated chart with helm and compares them; kept
	@# out of the unit tier (build tag chartrender) so test-unit needs no built tool.
	$(GO_TEST) -count=1 -tags chartrender -run "TestChartRendersConfigDefault|TestAgentSandboxSystemOverlay" ./hack/chart

.PHONY: fmt
fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: ## Run golangci-lint
	$(TOOLS) golangci-lint
	$(call in-modules,$(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...)

.PHONY: layout
layout: ## Write the table of Go packages in docs/development.md from each package's doc comment (hack/layout)
	go run ./hack/layout

.PHONY: vectors
vectors: ## Write sdk/testdata/contract-vectors.json from api/ and the Go SDK: the keys, readiness and claim-building cases the Python and TypeScript SDKs are tested against
	go run ./hack/vectors

.PHONY: verify
verify: generate manifests chart vectors layout lint chart-lint verify-ts web-check ## Regenerate, lint (Go, TypeScript; python-lint runs in test), and fail when generated files are stale or untracked
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		echo "Generated files are out of date; run 'make generate manifests chart vectors layout' and commit:"; \
		git status --porcelain -- $(GENERATED); git diff --stat -- $(GENERATED); exit 1; fi
	@echo "verify: generated code and charts/kubox are current, lint is clean, the chart lints and renders"

##@ Build
.PHONY: build
build: ## Build every binary into bin/
	CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/...
	$(call in-modules,go build ./... && go vet ./...)

##@ Test
.PHONY: test
# TEST_TIERS are make test's tiers, in the order it runs them. LOAD=1 runs the Go integration tier
# with every CPU busy (test-integration-loaded) instead of on a quiet machine, as CI does.
LOAD ?=
TEST_TIERS := test-unit test-root python-lint test-python test-ts test-conformance $(if $(LOAD),test-integration-loaded,test-integration) test-e2e
test: ## Run every tier: Go unit, Python (lint, unit, integration), TypeScript (unit), sandboxd conformance, Go integration, end-to-end (needs root); prints each tier's duration at the end
	MAKE=$(MAKE) hack/test-tiers.sh $(TEST_TIERS)

.PHONY: test-unit
test-unit: ## Go unit tests of every module (no API server, no built tool, no root): what a contributor runs in the edit loop, on Linux or macOS
	$(call in-modules,$(GO_TEST) -race -count=1 $$(go list ./... | grep -v /test/))

.PHONY: test-root
test-root: test-gvisor-patch ## Go unit tests that need root (build tag root: internal/devenv mounts tmpfs, internal/node/cli chroots); Linux only
	$(GO_TEST) -count=1 -tags root ./internal/devenv ./internal/node/cli

.PHONY: test-gvisor-patch
test-gvisor-patch: ## The patched gVisor shim's kubox tests (the attacks on a restore from a snapshot) on a patched copy of the pinned module; pure Go, no root, builds no tool; Linux only
	hack/tools/install.sh test-gvisor-patch

.PHONY: test-conformance
test-conformance: ## agent-sandbox's sandboxd protocol against a real kubox-agent on 127.0.0.1 (pure Go; through kubox-router in test-integration)
	$(GO_TEST) -race -count=1 ./test/conformance/

.PHONY: test-integration
test-integration: chromium-deps python-deps e2b-deps ## Go integration tests against the repo's own etcd and kube-apiserver, sandboxd conformance through kubox-router, and the code interpreter with the host's python3 (matplotlib), node and bash and the stock @e2b/code-interpreter (the Python SDK's are in test-python)
	$(TOOLS) seaweedfs
	KUBOX_SEAWEEDFS=$$($(TOOLS) dir seaweedfs)/weed $(GO_TEST) -count=1 -timeout 15m ./internal/node/store/ ./internal/audit/ ./internal/usage/
	KUBOX_SEAWEEDFS=$$($(TOOLS) dir seaweedfs)/weed KUBEBUILDER_ASSETS=$$($(TOOLS) envtest) $(GO_TEST) -count=1 -timeout 30m $$(go list ./test/integration/... | grep -v -e /test/integration/pysdk -e /test/integration/tssdk -e /test/integration/tsweb -e /test/integration/clientenv) ./test/conformance/router/

.PHONY: test-integration-loaded
# BURN_WORKERS is how many busy workers hack/burn runs beside the tier; empty: one per CPU.
BURN_WORKERS ?=
test-integration-loaded: ## test-integration with hack/burn keeping every CPU busy beside it (make test LOAD=1 runs it in its place, as CI does); the burner is stopped by its PID however the tier ends
	@tmp=$$(mktemp -d) && \
	trap 'pid=$$(cat "$$tmp/burn.pid" 2>/dev/null || echo "$${bpid:-}"); [ -z "$$pid" ] || kill "$$pid" 2>/dev/null; wait; rm -rf "$$tmp"' EXIT && \
	trap 'exit 130' INT TERM && \
	go build -o "$$tmp/burn" ./hack/burn && \
	{ "$$tmp/burn" -pidfile "$$tmp/burn.pid" $(if $(BURN_WORKERS),-workers $(BURN_WORKERS)) & bpid=$$!; } && \
	until [ -s "$$tmp/burn.pid" ]; do kill -0 "$$bpid" 2>/dev/null || { echo "test-integration-loaded: hack/burn exited before writing $$tmp/burn.pid"; exit 1; }; sleep 0.1; done && \
	echo "test-integration-loaded: hack/burn pid $$(cat "$$tmp/burn.pid") on $$(nproc) CPUs; loadavg $$(cat /proc/loadavg)" && \
	$(MAKE) --no-print-directory test-integration; rc=$$?; \
	echo "test-integration-loaded: loadavg $$(cat /proc/loadavg)"; exit $$rc

.PHONY: test-python
test-python: python-deps python-generate-check ## The Python SDK's unit tests and its integration tests (test/integration/pysdk); PYTEST_ADDOPTS passes pytest flags
	$(PYTHON) -m pytest -q -p no:cacheprovider sdk/python/tests/unit
	KUBEBUILDER_ASSETS=$$($(TOOLS) envtest) $(GO_TEST) -count=1 -timeout 15m -v ./test/integration/pysdk/

# The Python SDK runs on Debian's interpreter with Debian's packages (the python3 first on PATH may
# be another interpreter that cannot see them).
PYTHON        ?= /usr/bin/python3
PYTHON_DEBS   := python3-kubernetes python3-httpx python3-protobuf python3-pytest python3-pytest-asyncio python3-venv \
		 python3-pyflakes mypy protobuf-compiler mypy-protobuf python3-matplotlib
# The SDK's message types (kubox._proto), generated from proto/ with protoc's Python generator and
# mypy-protobuf's stubs; `make python-generate` rewrites them, python-generate-check fails when stale.
PYTHON_PROTO  := sdk/python/src/kubox/_proto
PYTHON_PROTOC  = protoc -I proto --python_out=$(1) --mypy_out=quiet:$(1) $(sort $(wildcard proto/kubox/agent/v1/*.proto))
.PHONY: python-lint
python-lint: python-deps python-generate-check ## pyflakes over the Python SDK (not its generated code), and mypy: every function of package kubox typed, the hints consistent
	$(PYTHON) -m pyflakes $$(find sdk/python -name '*.py' ! -name '*_pb2.py')
	cd sdk/python/src && $(PYTHON) -m mypy --config-file ../pyproject.toml --ignore-missing-imports --disallow-untyped-defs --disallow-incomplete-defs kubox

.PHONY: python-deps
python-deps: ## Install the Python SDK's Debian packages when they are missing (runtime, tests, pyflakes and mypy), and matplotlib for the code interpreter's PNG test
	@{ $(PYTHON) -c 'import kubernetes, httpx, google.protobuf, pytest, pytest_asyncio, venv, ensurepip, pyflakes, mypy, matplotlib' && \
	  command -v protoc protoc-gen-mypy; } >/dev/null 2>&1 || { \
	  echo "installing $(PYTHON_DEBS)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(PYTHON_DEBS) || { \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(PYTHON_DEBS); }; }

.PHONY: python-generate
python-generate: python-deps ## Regenerate the Python SDK's message types (kubox._proto) from proto/
	$(call PYTHON_PROTOC,$(PYTHON_PROTO))

.PHONY: python-generate-check
python-generate-check: python-deps ## Fail when the Python SDK's generated message types differ from what proto/ generates
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && $(call PYTHON_PROTOC,$$tmp) && \
	  diff -r -x __init__.py -x __pycache__ "$$tmp/kubox" $(PYTHON_PROTO)/kubox || { \
	  echo "$(PYTHON_PROTO) is stale: run 'make python-generate' and commit"; exit 1; }

# The TypeScript SDK's npm dependencies, installed with `npm ci` when the lockfile is newer than
# node_modules; protoc-gen-es, which `make proto` runs, is one of them.
$(TS_DEPS): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	cd $(TS_DIR) && npm ci --no-audit --no-fund

.PHONY: ts-install
ts-install: ## Install the TypeScript SDK's npm dependencies from its lockfile (npm ci)
	cd $(TS_DIR) && npm ci --no-audit --no-fund

.PHONY: ts-build
ts-build: $(TS_DEPS) ## Build the TypeScript SDK into sdk/typescript/dist (its end-to-end test and benchmark run from there)
	cd $(TS_DIR) && npm run build

.PHONY: test-ts
test-ts: $(TS_DEPS) chromium-deps ## The TypeScript SDK's tests (node --test): unit against a real kubox-agent, integration against a real environment (test/integration/tssdk), @kubox/sdk/web in Chromium (test/integration/tsweb)
	cd $(TS_DIR) && npm test
	KUBEBUILDER_ASSETS=$$($(TOOLS) envtest) $(GO_TEST) -count=1 -timeout 15m -v ./test/integration/tssdk/ ./test/integration/tsweb/

# E2B's stock JavaScript SDK, pinned in test/e2b/package-lock.json, for the conformance tests
# test/e2e runs (TestE2BSDKConformance) and the e2b-sdk case of its benchmark.
E2B_DIR  := test/e2b
E2B_DEPS := $(E2B_DIR)/node_modules/.package-lock.json
$(E2B_DEPS): $(E2B_DIR)/package.json $(E2B_DIR)/package-lock.json
	cd $(E2B_DIR) && npm ci --no-audit --no-fund

.PHONY: e2b-deps
e2b-deps: $(E2B_DEPS) ## Install E2B's SDK for the E2B conformance tests (npm ci in test/e2b)

.PHONY: verify-ts
verify-ts: $(TS_DEPS) ## Type-check (tsc --noEmit, strict) and lint (eslint, typescript-eslint) the TypeScript SDK
	cd $(TS_DIR) && npm run typecheck && npm run lint

# The web dashboard (web/), bundled with esbuild into internal/router/ui/dist, which kubox-router
# embeds; the bundle is committed so `go build` needs no Node.
WEB_DIR        := web
WEB_DEPS       := $(WEB_DIR)/node_modules/.package-lock.json
WEB_DIST       := internal/router/ui/dist
$(WEB_DEPS): $(WEB_DIR)/package.json $(WEB_DIR)/package-lock.json
	cd $(WEB_DIR) && npm ci --no-audit --no-fund

.PHONY: web
web: $(WEB_DEPS) ## Build the web dashboard (web/) into internal/router/ui/dist, which kubox-router embeds
	cd $(WEB_DIR) && npm run build

.PHONY: web-check
web-check: $(WEB_DEPS) ## Fail when the committed dashboard bundle differs from what web/ builds
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && (cd $(WEB_DIR) && node build.mjs "$$tmp/dist") && \
	  diff -r "$$tmp/dist" $(WEB_DIST) || { echo "$(WEB_DIST) is stale: run 'make web' and commit"; exit 1; }

# The dashboard's browser test drives Debian's Chromium.
.PHONY: chromium-deps
chromium-deps: ## Install Debian's Chromium when it is missing (the dashboard's browser test)
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium || { \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; }

##@ Benchmarks
.PHONY: bench
bench: bench-claims bench-agent bench-router bench-e2e ## Every benchmark: claims on a kwok cluster, kubox-agent and kubox-router on loopback, pod/Sandbox start on the real node

.PHONY: bench-agent
bench-agent: ## kubox-agent on 127.0.0.1: exec round trip, stdout streaming, 1 GiB file upload/download, memory
	go run ./test/bench/agent $(BENCH_ARGS)

.PHONY: bench-router
bench-router: ## kubox-router on 127.0.0.1: exec round trip through it vs straight to the agent, requests/s at 50 clients, memory
	KUBEBUILDER_ASSETS=$$($(TOOLS) envtest) go run ./test/bench/router $(BENCH_ARGS)

.PHONY: bench-claims
bench-claims: ## Claim latency, throughput and API writes per claim against a 300-member warm pool (kwok nodes)
	$(TOOLS) kubernetes kwok
	KUBEBUILDER_ASSETS=$$($(TOOLS) envtest) go run ./test/bench/claims $(BENCH_ARGS)

##@ Run
# The state folder of `kubox dev up` as root, where its kubeconfig and kubectl are.
DEV_STATE   ?= /var/lib/kubox-dev
DEV_KUBECTL  = $(DEV_STATE)/bin/kubectl --kubeconfig $(DEV_STATE)/kubeconfig
DEV_SAMPLE  ?= config/samples/sandbox.yaml

.PHONY: dev
dev: kubox ## Run kubox on a real local node (runc + gVisor) and show a sample Sandbox; needs root
	$(KUBOX) dev up --state-dir $(DEV_STATE) $(KUBOX_DEV_ARGS)
	$(DEV_KUBECTL) apply -f $(DEV_SAMPLE)
	$(DEV_KUBECTL) wait --for=condition=Ready --timeout=180s -f $(DEV_SAMPLE)
	$(DEV_KUBECTL) get -f $(DEV_SAMPLE) -o wide
	$(DEV_KUBECTL) get pod,service -l agents.x-k8s.io/sandbox-name-hash -o wide
	@echo; echo "kubox is running. Use it:  export KUBECONFIG=$(DEV_STATE)/kubeconfig; PATH=$(DEV_STATE)/bin:\$$PATH"
	@echo "  kubectl exec sample -- cat /proc/version    # the gVisor kernel"
	@echo "Stop it: make dev-down    Status: make dev-status"

.PHONY: dev-sim
dev-sim: ## Run a simulated control plane (kwok, no root) with kubox and the sample in the foreground; Ctrl-C stops it
	$(TOOLS) etcd kubernetes kwok
	go build -o bin/kubox-controller ./cmd/kubox-controller
	hack/dev.sh

include hack/make/devenv.mk
