# pi-sandbox — see README.md.
GO      ?= go
BIN     ?= bin/pi-sandbox
PKGS    ?= ./...
# A test binary's limit: the integration package takes about 21 minutes alone and about
# twice that beside the other packages on a 2-core machine.
TIMEOUT ?= 60m

export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: all build test test-unit lint images runtimes podman bench faults demo clean cluster cluster-build cluster-down cluster-test

all: build

# Static binaries: the CLI, and next to it the slim in-target helper it runs
# locally (pi-sandbox-shim) and mounts or uploads into containers, pods and ssh
# hosts — pi-sandbox-shim-linux-ARCH for each of SHIM_ARCHES, chosen by the
# target's architecture. On Linux pi-sandbox-shim is a hard link to the one of
# this host's architecture.
SHIM ?= $(dir $(BIN))pi-sandbox-shim
SHIM_ARCHES ?= amd64 arm64
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/pi-sandbox
	for a in $(SHIM_ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -ldflags='-s -w' -o $(SHIM)-linux-$$a ./cmd/pi-sandbox-shim || exit 1; \
	done
	@set -e; os=$$($(GO) env GOOS); arch=$$($(GO) env GOARCH); \
	if [ "$$os" = linux ] && [ -f $(SHIM)-linux-$$arch ]; then \
	  echo "ln -f $(SHIM)-linux-$$arch $(SHIM)"; ln -f $(SHIM)-linux-$$arch $(SHIM) 2>/dev/null || cp -f $(SHIM)-linux-$$arch $(SHIM); \
	else \
	  echo "CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(SHIM) ./cmd/pi-sandbox-shim"; \
	  CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(SHIM) ./cmd/pi-sandbox-shim; \
	fi

# Unit tests, the conformance suite on every backend, and the integration tests.
# The slim static binary is the helper the tests run locally and upload. When an engine
# is reachable the images the tests use are built first (a no-op when current). The run ends
# with a summary backend by backend of what passed and what was skipped and why
# (internal/testsum); under CI=true a missing engine, image or sshd fails instead.
TEST_IMAGES ?= pi-sandbox/busybox pi-sandbox/debian pi-sandbox/sshd
test: build
	$(GO) vet $(PKGS)
	@if $(BIN) image ls >/dev/null 2>&1; then \
	  $(BIN) image build $(TEST_IMAGES) || { [ "$$CI" != true ] && echo "make test: image build failed: the tests that need them will skip"; }; \
	else echo "make test: no Docker engine reachable: the docker tests will skip (images not built)"; fi
	PI_SANDBOX_BIN=$(abspath $(BIN)) PI_SANDBOX_SHIM_BIN=$(abspath $(SHIM)) $(GO) run ./internal/testsum -- \
	  $(GO) test -json -race -count=1 -timeout $(TIMEOUT) $(PKGS)
	@# Memory bounds are measured without the race detector (it multiplies
	@# memory), in children capped by ulimit -v; under -race they skip.
	$(GO) test -count=1 -timeout 10m -run TestToolsMemory ./tools/

test-unit:
	$(GO) test -race -short -timeout $(TIMEOUT) $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

images: build
	$(BIN) image build

# gVisor: builds runsc from its Go module (pinned in hack/runsc, cached by version under
# ~/.cache/pi-sandbox) and registers it with the running engine as the runtime
# "runsc" (merged into /etc/docker/daemon.json, then a SIGHUP reload; the engine is never
# restarted). Idempotent; needs root. The runsc tests need it (they fail under CI=true without).
runtimes:
	GO=$(GO) .ci/runtimes

# Podman's Docker-compatible service on /run/pi-sandbox-podman/podman.sock with the images loaded
# from Docker, for PI_SANDBOX_PODMAN_HOST=unix:///run/pi-sandbox-podman/podman.sock go test -run
# TestPodmanConformance ./integration/ (.ci/run does both; `.ci/podman down` stops it).
podman: images
	.ci/podman

# Latency, throughput and concurrency per backend, beside baselines measured in the same run
# (bench/results.md, bench/results.json). BENCHFLAGS=-quick, BENCHFLAGS='-backends local,ssh'.
bench: build
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/pibench ./bench/cmd/pibench
	bin/pibench bench -bin $(BIN) $(BENCHFLAGS)

# Reliability under faults (bench/faults.md): timeouts and aborts of process trees, killed and
# paused containers, cut SSH connections, sshd restarts, escape attempts; then the docker
# timeout trials with the shim and the plain wrapper (bench/faults-docker-trials.txt).
# FAULT_TRIALS=50 for a shorter run; FAULTFLAGS='-backends local,ssh'.
FAULT_TRIALS ?= 200
faults: build
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/pibench ./bench/cmd/pibench
	bin/pibench faults -bin $(BIN) -trials $(FAULT_TRIALS) $(FAULTFLAGS)
	PI_SANDBOX_BIN=$(abspath $(BIN)) PI_SANDBOX_SHIM_BIN=$(abspath $(SHIM)) FAULT_TRIALS=$(FAULT_TRIALS) $(GO) test -tags faults -run TestDockerTimeoutTrials -count=1 -v -timeout 30m ./integration/ 2>&1 | tee bench/faults-docker-trials.txt
	@if grep -q '^FAIL' bench/faults-docker-trials.txt || grep -q '[*][*]missed[*][*]' bench/faults.md; then \
		echo "faults: FAIL (a target in bench/faults.md missed, or the docker timeout trials failed)"; exit 1; \
	else echo "faults: PASS (every target in bench/faults.md met; docker timeout trials passed)"; fi

# The main job: replay examples/stats/demo.jsonl (an agent finding and fixing a bug) with
# `pi-sandbox run` on the local backend, in a temporary copy, then check its tests pass.
demo: build
	@tmp=$$(mktemp -d) && cp -R examples/stats/. "$$tmp" && \
	$(BIN) run --workdir "$$tmp" examples/stats/demo.jsonl && \
	echo "--- go test in the fixed copy ($$tmp)" && (cd "$$tmp" && $(GO) test ./...); \
	rc=$$?; rm -rf "$$tmp"; exit $$rc

# A single-node Kubernetes cluster on this machine (hack/cluster): built from Go modules and
# Debian packages (cached by version, minutes the first time), started in the background with
# the agent-sandbox controller and its CRDs; the last line printed is its kubeconfig. Needs root
# and the Docker engine (for the images). make cluster-build only fills that cache.
# CLUSTER_JOBS raises the build parallelism (go build -p, GOMAXPROCS).
CLUSTER_JOBS ?= 1
CLUSTER      = $(GO) run ./hack/cluster -jobs $(CLUSTER_JOBS)
cluster:
	@$(CLUSTER) up

cluster-build:
	@$(CLUSTER) build

cluster-down:
	@$(CLUSTER) down

# Smoke check of the cluster (brought up if it is not running): a pod from the imported
# busybox image, exec stdout/stderr and exit code, deletion.
cluster-test: build
	@kc=$$($(CLUSTER) up) && \
	KUBECONFIG=$$kc PI_SANDBOX_SHIM_BIN=$(abspath $(BIN)) $(GO) test -run '^TestK8sCluster' -count=1 -v ./integration/

clean:
	rm -rf bin
