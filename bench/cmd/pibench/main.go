// Command pibench measures pi-sandbox (make bench) and checks its
// reliability under faults (make faults). Every figure is reported beside a
// baseline measured in the same run, because the machines it runs on are
// noisy: ratios travel, absolute numbers do not. Nothing here asserts a
// time; targets are reported as met or missed.
//
//	pibench bench  [-quick] [-backends local,docker,runsc,podman,ssh,k8s] [-grep-only] [-pool-only] [-net-only] [-checkpoint-only] [-http-only] [-out bench]
//	pibench faults [-trials N] [-backends local,docker,ssh] [-out bench]
//	pibench verdict [-out bench]   (the one-line verdict of faults.json and the docker trials)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// options are the flags both commands share.
type options struct {
	quick          bool
	backends       []string
	out            string
	bin            string // the pi-sandbox CLI under test
	shim           string // the slim in-target binary (pi-sandbox-shim)
	image          string
	trials         int
	parallel       int
	helperOnly     bool
	hardeningOnly  bool
	hardening2     bool
	grepOnly       bool
	poolOnly       bool
	netOnly        bool
	checkpointOnly bool
	httpOnly       bool
	poolN          int
	poolDensity    int
	poolImage      string
	cliN           int
	n              int

	// runscImage is the image of the "runsc" backend (docker on gVisor):
	// busybox, since GNU coreutils' stat fails under Debian 12's runsc.
	runscImage string
	// podmanImage is the image of the "podman" backend (the docker
	// backend on Podman's service at $PI_SANDBOX_PODMAN_HOST, see make
	// podman, which loads busybox only).
	podmanImage string
}

func (o *options) has(b string) bool {
	for _, x := range o.backends {
		if x == b {
			return true
		}
	}
	return false
}

func main() {
	// Planted in a container as a hostile helper (faults), this binary
	// serves as one.
	hostileHelper()
	// The local backend re-executes this binary as its shim.
	shim.Dispatch()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pibench bench|faults|verdict [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case rssChildCmd:
		os.Exit(rssChild(ctx, args))
	case slowChildCmd:
		os.Exit(slowChild(ctx, args))
	}
	var o options
	fs := flag.NewFlagSet("pibench "+cmd, flag.ExitOnError)
	backends := fs.String("backends", "", "comma-separated backends to measure (bench default local,docker,runsc,podman,ssh,k8s — runsc is docker on gVisor, podman the docker backend on Podman's service at $PI_SANDBOX_PODMAN_HOST, both latency only; k8s needs $KUBECONFIG; faults default local,docker,ssh)")
	fs.BoolVar(&o.quick, "quick", false, "fewer iterations")
	fs.StringVar(&o.out, "out", "bench", "directory for results.md, results.json, faults.md")
	fs.StringVar(&o.bin, "bin", "bin/pi-sandbox", "the pi-sandbox CLI under test")
	fs.StringVar(&o.shim, "shim", "", "the in-target binary (zero: pi-sandbox-shim next to -bin)")
	fs.StringVar(&o.image, "image", "pi-sandbox/debian", "docker image (pi-sandbox/busybox also works)")
	fs.StringVar(&o.runscImage, "runsc-image", "pi-sandbox/busybox", "image of the runsc backend (the runtime runsc, see make runtimes)")
	fs.StringVar(&o.podmanImage, "podman-image", "pi-sandbox/busybox", "image of the podman backend (Podman's service at $PI_SANDBOX_PODMAN_HOST, see make podman)")
	fs.IntVar(&o.n, "n", 0, "in-process calls per latency op (0: 200, -quick 40)")
	fs.IntVar(&o.cliN, "cli-n", 0, "CLI calls per latency op (0: 50, -quick 10)")
	fs.IntVar(&o.trials, "trials", 200, "faults: trials per timeout scenario (others run trials/10, at least 5)")
	fs.IntVar(&o.parallel, "parallel", 4, "faults: trials run concurrently")
	fs.BoolVar(&o.helperOnly, "helper-only", false, "faults: only the helper lifecycle scenarios")
	fs.BoolVar(&o.hardeningOnly, "hardening-only", false, "faults: only the replays of the adversarial runs' defects (issues 17 and 24)")
	fs.BoolVar(&o.hardening2, "hardening2-only", false, "faults: only the replays of the second adversarial run's defects (docker, through up sandboxes and a planted helper)")
	fs.BoolVar(&o.grepOnly, "grep-only", false, "bench: only grep on a copy of Go's source tree against rg (local backend)")
	fs.BoolVar(&o.poolOnly, "pool-only", false, "bench: only the pools section (claims from filled pools, cold one-shot, density; docker, and k8s warm pools when $KUBECONFIG is set)")
	fs.BoolVar(&o.httpOnly, "http-only", false, "bench: only the serve --http section (new sessions with and without a pool, per-call latency against stdio serve, 64 concurrent sessions; docker, image -pool-image)")
	fs.BoolVar(&o.checkpointOnly, "checkpoint-only", false, "bench: only the checkpoints section (checkpoint, diff, restore on a copy of Go's src against git, local)")
	fs.BoolVar(&o.netOnly, "net-only", false, "bench: only the network section (port tunnel latency, bulk and RSS, egress proxy latency; docker runc, image -pool-image)")
	fs.IntVar(&o.poolN, "pool-n", 0, "bench: claims per pools op (0: 20, -quick 5)")
	fs.IntVar(&o.poolDensity, "pool-density", 20, "bench: idle members the pools density run fills (100 for the large run)")
	fs.StringVar(&o.poolImage, "pool-image", "pi-sandbox/busybox", "bench: image of the pools section and of its docker run baseline")
	fs.DurationVar(&opBudget, "budget", 0, "time limit per measured op (0: 8s, -quick 4s); an op that hits it reports on fewer calls")
	fs.Parse(args)
	if opBudget == 0 {
		opBudget = 8 * time.Second
		if o.quick {
			opBudget = 4 * time.Second
		}
	}
	if *backends == "" {
		*backends = "local,docker,ssh"
		if cmd == "bench" {
			*backends = "local,docker,runsc,podman,ssh,k8s"
		}
	}
	for _, b := range strings.Split(*backends, ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.backends = append(o.backends, b)
		}
	}
	if o.n == 0 {
		o.n = 200
		if o.quick {
			o.n = 40
		}
	}
	if o.poolN == 0 {
		o.poolN = 20
		if o.quick {
			o.poolN = 5
		}
	}
	if o.cliN == 0 {
		o.cliN = 50
		if o.quick {
			o.cliN = 10
		}
	}
	if abs, err := filepath.Abs(o.bin); err == nil {
		o.bin = abs
	}
	if _, err := os.Stat(o.bin); err != nil {
		fmt.Fprintf(os.Stderr, "pibench: %v (run make build first)\n", err)
		os.Exit(1)
	}
	if o.shim == "" {
		o.shim = filepath.Join(filepath.Dir(o.bin), shim.BinaryName)
	}
	if abs, err := filepath.Abs(o.shim); err == nil {
		o.shim = abs
	}
	if _, err := os.Stat(o.shim); err != nil {
		fmt.Fprintf(os.Stderr, "pibench: %v (run make build first)\n", err)
		os.Exit(1)
	}
	// Targets (and the local backend, and the CLI) run the slim binary as
	// their shim and helper.
	os.Setenv("PI_SANDBOX_SHIM_BIN", o.shim)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "pibench: %v\n", err)
		os.Exit(1)
	}
	var err error
	switch cmd {
	case "bench":
		err = runBench(ctx, &o)
	case "faults":
		err = runFaults(ctx, &o)
	case "verdict":
		err = runVerdict(&o)
	default:
		err = fmt.Errorf("unknown command %q (want bench, faults or verdict)", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pibench: %v\n", err)
		os.Exit(1)
	}
}
