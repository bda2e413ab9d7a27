# pi-sandbox — see README.md.
GO      ?= go
BIN     ?= bin/pi-sandbox
PKGS    ?= ./...
TIMEOUT ?= 30m

export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: all build test test-unit lint images bench faults demo clean

all: build

# Two static binaries: the CLI, and next to it the slim in-target helper it
# runs locally and uploads into containers and ssh hosts.
SHIM ?= $(dir $(BIN))pi-sandbox-shim
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/pi-sandbox
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(SHIM) ./cmd/pi-sandbox-shim

# Unit tests, the conformance suite on every backend, and the integration tests.
# The slim static binary is the helper the tests run locally and upload.
test: build
	$(GO) vet $(PKGS)
	PI_SANDBOX_BIN=$(abspath $(BIN)) PI_SANDBOX_SHIM_BIN=$(abspath $(SHIM)) $(GO) test -race -count=1 -timeout $(TIMEOUT) $(PKGS)

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

clean:
	rm -rf bin
