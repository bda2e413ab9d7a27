package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Versions of what the cluster is built from. tools/*/go.mod must require the same
// (TestToolsVersions).
const (
	kubeVersion         = "v1.37.2"
	containerdVersion   = "v2.4.2"
	pauseTag            = "3.10"
	agentSandboxVersion = "v1.0.1" // sigs.k8s.io/agent-sandbox: its controller and CRDs
)

// images are the project's images imported into the cluster's containerd, under the
// names a pod spec's "pi-sandbox/busybox:latest" resolves to (docker.io/...).
var images = []string{"pi-sandbox/busybox:latest", "pi-sandbox/debian:latest"}

func main() {
	fs := flag.NewFlagSet("cluster", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: cluster [flags] build|up|down\n\n"+
			"build: build or unpack what is missing into the cache, and start nothing.\n"+
			"up: build what is missing, start a single-node cluster in the background and print\n"+
			"    its kubeconfig path as the last line (only the path if it is already running).\n"+
			"down: stop the cluster and remove everything it created.\n\nflags:")
		fs.PrintDefaults()
	}
	cfg := config{}
	fs.StringVar(&cfg.stateDir, "state", envOr("PI_SANDBOX_CLUSTER_DIR", defaultStateDir()),
		"state directory: configs, data, logs, PID files, kubeconfig ($PI_SANDBOX_CLUSTER_DIR)")
	fs.StringVar(&cfg.cacheDir, "cache", defaultCacheDir(), "cache of built binaries and unpacked .debs")
	fs.StringVar(&cfg.repo, "repo", ".", "the pi-sandbox repository (for hack/cluster/tools and make images)")
	fs.IntVar(&cfg.jobs, "jobs", 1, "build parallelism (go build -p and GOMAXPROCS); the builds run under nice -n 15")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}
	var err error
	if cfg.repo, err = filepath.Abs(cfg.repo); err == nil {
		cfg.stateDir, err = filepath.Abs(cfg.stateDir)
	}
	if err == nil && os.Geteuid() != 0 {
		err = fmt.Errorf("cluster: must run as root (containerd and the kubelet need it)")
	}
	if err == nil {
		switch fs.Arg(0) {
		case "build":
			_, err = ensureBins(cfg)
		case "up":
			var kubeconfig string
			kubeconfig, err = up(cfg)
			if err == nil {
				fmt.Println(kubeconfig)
			}
		case "down":
			err = down(cfg)
		default:
			fs.Usage()
			os.Exit(2)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type config struct {
	stateDir, cacheDir, repo string
	jobs                     int
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "pi-sandbox", "cluster")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "pi-sandbox", "cluster")
}

func defaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "pi-sandbox", "cluster")
}

// logf reports progress on stderr, so that stdout's last line is the kubeconfig path.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cluster: "+format+"\n", args...)
}
