# Dockside. `make run` starts a local control plane and the agent; `make test` runs every test tier.
# Everything is built from source here: no download site or image registry is needed.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOFLAGS ?= -mod=mod
# Without this clone's path in what it builds, Go's build cache serves every clone and worktree of the repo:
# a fresh clone's test tiers compile only what changed instead of everything.
GOFLAGS += -trimpath
# envtest gives kube-apiserver 20 s to come up; a loaded 2-core machine can need more (tests, bench, make run).
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT ?= 2m

CONTROLLER_GEN := go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
# The control plane binaries (kube-apiserver, etcd, kubectl), built once per version by hack/, or the folder
# that KUBEBUILDER_ASSETS already names when it holds all three. The controlplane target says which; --quiet
# keeps each later use from saying it again.
ASSETS = $$(bash hack/build-controlplane.sh --quiet)
GO_TEST := go test -count=1
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := bin/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
# Debian's python3 with python3-kubernetes, installed with apt-get when missing, for the Python client's tests.
PYTHON = $$(bash $(CURDIR)/hack/ensure-python.sh)
# Debian's mypy, installed with apt-get when missing, for make lint's type check of the Python client (its options
# are in clients/python/pyproject.toml).
MYPY = $$(bash $(CURDIR)/hack/ensure-mypy.sh)
NODE ?= $(shell hostname)
# Loopback port of make run's data plane (exec through the API server), which kube-apiserver proxies to.
DATAPLANE_PORT ?= 9443
# Loopback port of make run's E2B gateway (docs/e2b.md): E2B_API_URL and E2B_SANDBOX_URL point at it.
E2B_PORT ?= 3000
# Optional for make run's E2B gateway (docs/e2b.md, "TLS"): its --domain, and a PEM certificate and key to serve
# HTTPS with; empty, it serves plain HTTP with no domain.
E2B_DOMAIN ?=
E2B_TLS_CERT ?=
E2B_TLS_KEY ?=
# Extra flags for make run's agent, e.g. AGENT_FLAGS="--host-firewall=false --capacity=20".
AGENT_FLAGS ?=
# GVISOR=1 makes gVisor the default runtime of make run's agent (docs/deploy.md, "Running Sandboxes under gVisor"):
# runsc is installed with apt-get when missing, and the run stops, saying what to add to daemon.json, while this
# machine's Docker does not list it. Empty: runc, and gVisor for the Sandboxes that ask for it where Docker offers it.
GVISOR ?=
GVISOR_FLAGS = $$(if [ -n "$(GVISOR)" ]; then bash $(CURDIR)/hack/ensure-gvisor.sh; fi)

.PHONY: help all build manifests generate fmt vet lint check-docker test test-unit test-integration test-e2e run stop images test-images bench perfdoc clean controlplane
# help comes first so that it lists itself first; plain `make` still builds.
.DEFAULT_GOAL := all

help: ## List every target with what it does.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "%-18s %s\n", $$1, $$2}'

all: build ## The default goal: build.

build: ## Build the agent and the local run helper into bin/.
	go build -o bin/ ./cmd/...

manifests: ## Regenerate CRDs and RBAC from the markers in api/ and internal/controller/.
	$(CONTROLLER_GEN) rbac:roleName=dockside-agent crd paths=./... output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

generate: ## Regenerate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

fmt: $(GOLANGCI_LINT) ## gofmt and goimports every Go file in place (the formatters of .golangci.yml).
	$(GOLANGCI_LINT) fmt ./...

vet: ## go vet every package, the test tiers included (build tags integration and e2e).
	go vet -tags integration,e2e ./...

lint: vet $(GOLANGCI_LINT) ## vet, golangci-lint (.golangci.yml: gofmt, goimports, import rules, error wrapping...), the import-rule test and the book's check.
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...
	$(GO_TEST) ./internal/architecture/
	cd clients/python && $(MYPY) --config-file pyproject.toml
	go run ./hack/doccheck

# golangci-lint at a pinned version, built from the Go module proxy with this Go once per version into bin/
# (go install keeps golangci-lint's own go.mod, so its dependencies never mix with the project's).
$(GOLANGCI_LINT):
	GOBIN="$(CURDIR)/$(@D)" go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

controlplane: ## Build kube-apiserver, etcd and kubectl from source (once per version; none with KUBEBUILDER_ASSETS set).
	@bash hack/build-controlplane.sh >/dev/null

images: ## Build every local image: busybox, holder, python, redis, base (FROM scratch; skips those present).
	@bash hack/build-images.sh

test-images: ## Only the images the test tiers need (busybox, holder), so they never wait on the Debian-based ones.
	@bash hack/build-images.sh busybox holder

check-docker: ## Fail early, saying so, when Docker is not reachable.
	@docker version >/dev/null 2>&1 || { echo "Docker is not reachable at $${DOCKER_HOST:-unix:///var/run/docker.sock}: start the daemon or set DOCKER_HOST" >&2; exit 1; }

test: test-unit test-integration test-e2e ## Every tier: unit, envtest and real Docker, end to end.

# Each tier says when it starts, so that a CI log tells each tier's time; go test's own lines end the output.
TIER = @echo ">> $@ starting at $$(date -u +%T) UTC"

test-unit: ## Pure tests: no API server, no Docker (`go test ./...`, the Python client's against a stubbed API, the python image's interpreter).
	$(TIER)
	$(GO_TEST) ./...
	cd clients/python && PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m unittest discover -s tests -t .
	cd hack/images/python && PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m unittest discover -s tests -t .

test-integration: check-docker controlplane test-images ## envtest suites (real API server, fake driver) and the driver against real Docker.
	$(TIER)
	KUBEBUILDER_ASSETS="$(ASSETS)" $(GO_TEST) -tags integration -timeout 30m ./test/integration/...

# The end-to-end suite runs as two shards at once (hack/test-shards.sh): these spec files, the ones that stop
# or restart something for a minute or more, in one; every other file in the other. Their times are about even.
E2E_SHARD_A = /(api_outage|density|control_restart|control_plane_restart|agent_restart|docker_restart|dockerd|gvisor|node_loss|dataplane_restart|fleet|python_client)_test\.go$$

test-e2e: check-docker controlplane images build ## The real agent binary, real API server, real Docker, kubectl.
	$(TIER)
	KUBEBUILDER_ASSETS="$(ASSETS)" DOCKSIDE_BIN="$(CURDIR)/bin" DOCKSIDE_PYTHON="$(PYTHON)" bash hack/test-shards.sh ./test/e2e/ '$(E2E_SHARD_A)' -count=1 -v -tags e2e -timeout 40m

# A person reads make run's terminal, so the agent logs in zap's console encoding there; everywhere else
# (the tests, the DaemonSet, the systemd unit) it keeps JSON, which the end-to-end tests parse. Its metrics are
# plain HTTP on loopback, http://127.0.0.1:8080/metrics, for curl or a local Prometheus without credentials.
run: check-docker controlplane images build ## Local control plane + the agent on this machine's Docker + the E2B gateway; Ctrl-C stops all.
	@# A failure inside the agent's command line would not stop make: the check runs on a line of its own first.
	@if [ -n "$(GVISOR)" ]; then bash hack/ensure-gvisor.sh >/dev/null; fi
	KUBEBUILDER_ASSETS="$(ASSETS)" bin/dockside-dev -data-dir .local/etcd -kubeconfig .local/kubeconfig -dataplane-port $(DATAPLANE_PORT) -cert-dir .local/pki -peer-node $(NODE) -e2b-gateway bin/dockside-e2b -e2b-listen 127.0.0.1:$(E2B_PORT) $(if $(E2B_DOMAIN),-e2b-domain $(E2B_DOMAIN)) $(if $(E2B_TLS_CERT),-e2b-tls-cert $(E2B_TLS_CERT) -e2b-tls-key $(E2B_TLS_KEY)) -- bin/dockside-agent --node-name=$(NODE) --kubeconfig=.local/kubeconfig --checkpoint-dir=.local/checkpoints --zap-encoder=console --metrics-bind-address=127.0.0.1:8080 --metrics-secure=false --dataplane-bind-address=127.0.0.1:$(DATAPLANE_PORT) --dataplane-cert-dir=.local/pki/dataplane --dataplane-peer-cert-dir=.local/pki/peers/$(NODE) --image-gc-high-threshold=100 $(GVISOR_FLAGS) $(AGENT_FLAGS)

stop: ## Stop what `make run` started, from another terminal.
	@go run ./cmd/dockside-dev stop -pid-file .local/run.pids

bench: check-docker controlplane images build ## Benchmarks against plain Docker; prints a table and writes docs/bench-results.json.
	KUBEBUILDER_ASSETS="$(ASSETS)" DOCKSIDE_BIN="$(CURDIR)/bin" DOCKSIDE_PYTHON="$(PYTHON)" BENCH_RESULTS="$(CURDIR)/docs/bench-results.json" go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./test/bench/...

perfdoc: ## Rewrite the results table of docs/performance.md from docs/bench-results.json (after make bench).
	go run ./hack/perfdoc

clean: ## Remove built binaries, local state, and this node's sandboxes in Docker (keeps the control plane build).
	rm -rf bin/dockside-* .local
	@filter="label=dev.dockside.node=$(NODE)"; \
	  docker ps -aq --filter "$$filter" | xargs -r docker rm -f >/dev/null; \
	  docker network ls -q --filter "$$filter" | xargs -r docker network rm >/dev/null; \
	  docker volume ls -q --filter "$$filter" | xargs -r docker volume rm >/dev/null
