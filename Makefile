# pi-sandbox — see README.md.
GO      ?= go
BIN     ?= bin/pi-sandbox
PKGS    ?= ./...
TIMEOUT ?= 30m

export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: all build test test-unit lint images bench faults demo clean cluster cluster-down cluster-test

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/pi-sandbox

# Unit tests, the conformance suite on every backend, and the integration tests.
# The static binary doubles as the shim uploaded into containers and ssh hosts.
test: build
	$(GO) vet $(PKGS)
	PI_SANDBOX_SHIM_BIN=$(abspath $(BIN)) $(GO) test -race -count=1 -timeout $(TIMEOUT) $(PKGS)

test-unit:
	$(GO) test -race -short -timeout $(TIMEOUT) $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

images: build
	$(BIN) image build

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
	PI_SANDBOX_SHIM_BIN=$(abspath $(BIN)) FAULT_TRIALS=$(FAULT_TRIALS) $(GO) test -tags faults -run TestDockerTimeoutTrials -count=1 -v -timeout 30m ./integration/ 2>&1 | tee bench/faults-docker-trials.txt
	@! grep -q '^FAIL' bench/faults-docker-trials.txt

# The main job: replay examples/stats/demo.jsonl (an agent finding and fixing a bug) with
# `pi-sandbox run` on the local backend, in a temporary copy, then check its tests pass.
demo: build
	@tmp=$$(mktemp -d) && cp -R examples/stats/. "$$tmp" && \
	$(BIN) run --workdir "$$tmp" examples/stats/demo.jsonl && \
	echo "--- go test in the fixed copy ($$tmp)" && (cd "$$tmp" && $(GO) test ./...); \
	rc=$$?; rm -rf "$$tmp"; exit $$rc

# A single-node Kubernetes cluster on this machine (hack/cluster): built from Go modules and
# Debian packages (cached by version, minutes the first time), started in the background; the
# last line printed is its kubeconfig. Needs root and the Docker engine (for the images).
# CLUSTER_JOBS raises the build parallelism (go build -p, GOMAXPROCS).
CLUSTER_JOBS ?= 1
CLUSTER      = $(GO) run ./hack/cluster -jobs $(CLUSTER_JOBS)
cluster:
	@$(CLUSTER) up

cluster-down:
	@$(CLUSTER) down

# Smoke check of the cluster (brought up if it is not running): a pod from the imported
# busybox image, exec stdout/stderr and exit code, deletion.
cluster-test: build
	@kc=$$($(CLUSTER) up) && \
	KUBECONFIG=$$kc PI_SANDBOX_SHIM_BIN=$(abspath $(BIN)) $(GO) test -tags k8s -run '^TestK8sCluster' -count=1 -v ./integration/

clean:
	rm -rf bin
