# Local environment targets: a real single-node cluster with gVisor on this machine (kubox dev).
# Included by the top-level Makefile. Needs root; the first dev-up builds the pinned node tools
# (10-40 minutes on 2 cores, depending on load), later runs take seconds.
KUBOX          := bin/kubox
KUBOX_DEV_ARGS ?=
E2E_TIMEOUT    ?= 40m
GO_TEST        ?= go test
E2E_RUN        ?= .

.PHONY: kubox
kubox: ## Build the kubox CLI into bin/kubox
	CGO_ENABLED=0 go build -o $(KUBOX) ./cmd/kubox

##@ Local environment
.PHONY: images
images: ## Build the local images (busybox, pause, python; kubox-agent, kubox-controller, kubox-router: static, non-root; kubox-node: static, root) into ~/.cache/kubox/images
	go run ./cmd/kubox dev images

.PHONY: dev-up
dev-up: kubox ## Start the local single-node cluster with runc and gVisor (kubox dev up)
	$(KUBOX) dev up $(KUBOX_DEV_ARGS)

.PHONY: dev-down
dev-down: kubox ## Stop the local cluster and remove its state (kubox dev down)
	$(KUBOX) dev down $(KUBOX_DEV_ARGS)

.PHONY: dev-status
dev-status: kubox ## Show the local cluster's processes and readiness (kubox dev status)
	$(KUBOX) dev status $(KUBOX_DEV_ARGS)

.PHONY: test-e2e
test-e2e: python-deps e2b-deps ts-build ## End-to-end tests on the local cluster, kubox installed from config/dev (brings it up, tears it down; KUBOX_E2E_KEEP=1 keeps it; E2E_RUN selects tests), then agent-sandbox's Go SDK against it
	@# test/e2e leaves the environment up for agent-sandbox's SDK test, whose TestMain takes it down
	@# (unless KUBOX_E2E_KEEP=1); when test/e2e fails, it is taken down here.
	KUBOX_E2E_KEEP=1 $(GO_TEST) -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v -run '$(E2E_RUN)' ./test/e2e/... || \
		{ [ "$$KUBOX_E2E_KEEP" = 1 ] || $(KUBOX) dev down; exit 1; }
	cd test/agentsandbox && KUBOX_E2E_KEEP=$(KUBOX_E2E_KEEP) $(GO_TEST) -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v -run '$(E2E_RUN)' ./...

.PHONY: test-e2e-processes
test-e2e-processes: ## The end-to-end tests that do not need an install, with kubox-controller and -router as host processes (kubox dev up --in-cluster=false)
	KUBOX_E2E_IN_CLUSTER=0 $(GO_TEST) -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v -run '$(E2E_RUN)' -skip '^TestInCluster' ./test/e2e/...

.PHONY: bench-e2e
bench-e2e: python-deps e2b-deps ts-build ## Pod and Sandbox start latency on the local cluster, runc vs gVisor (p50 over 20)
	$(GO_TEST) -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -run '^$$' -bench . -benchtime 20x ./test/e2e/...
