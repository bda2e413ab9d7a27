package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/ops/savedout"
)

func init() {
	register("up", &command{summary: "start a long-lived hardened sandbox container (or pod) and print its id (name)", run: runUp})
}

// runUp is `pi-sandbox up [flags]`: the container stays until `down` (or
// `gc --all`); use it with --backend docker --container ID. Its CLI calls
// share one long-lived helper (started by the first), so what a call leaves
// running in the background lives until down.
func runUp(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(io.err)
	var cfg docker.Config
	var mounts, labels multiFlag
	var kf k8sFlags
	kf.register(fs)
	fs.StringVar(&cfg.Image, "image", "pi-sandbox/debian", "image (local; nothing is pulled — see `pi-sandbox image build`)")
	fs.StringVar(&cfg.WorkDir, "workdir", "", "working directory in the container (default /workspace, a fresh volume)")
	fs.StringVar(&cfg.User, "user", "", "UID:GID (default 1000:1000)")
	fs.Var(&mounts, "mount", "bind mount HOST:TARGET[:ro] (repeatable)")
	fs.Var(&labels, "label", "extra label KEY=VALUE (repeatable)")
	fs.Int64Var(&cfg.Memory, "memory", 0, "memory limit in bytes (default 2 GiB; -1 none)")
	fs.Float64Var(&cfg.CPUs, "cpus", 0, "CPU limit (default 2; -1 none)")
	fs.Int64Var(&cfg.PidsLimit, "pids-limit", 0, "process and thread limit (default 2048; -1 none)")
	fs.StringVar(&cfg.Runtime, "runtime", "", "the engine's OCI runtime, e.g. runsc (gVisor; see `make runtimes`; default the engine's)")
	fs.BoolVar(&cfg.AllowNetwork, "allow-network", false, "relaxation: attach to the engine's default network (default: none)")
	fs.BoolVar(&cfg.WritableRootfs, "writable-rootfs", false, "relaxation: writable root file system")
	fs.Var((*sizeFlag)(&cfg.MaxSavedOutput), "max-saved-output", "total `SIZE` of the saved full outputs and background logs, e.g. 4g, 512m (default 4g; -1 none)")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: pi-sandbox up [flags]\n\nThe sandbox stays until `pi-sandbox down ID`; use it with --backend docker --container ID.\nIts calls share one helper: background processes a call leaves running live until down.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(io.err, "pi-sandbox up: unexpected arguments:", fs.Args())
		return 2
	}
	if !kf.check("up", io) {
		return 2
	}
	if kf.backend == "k8s" {
		if cfg.MaxSavedOutput != 0 {
			fmt.Fprintf(io.err, "pi-sandbox up: --max-saved-output is for the docker backend; a pod's saved outputs have the default total (%s)\n", savedout.Size(ops.DefaultSavedOutputTotal))
			return 2
		}
		return upK8s(ctx, &kf, cfg.Image, cfg.WorkDir, cfg.User, mounts, labelMap(labels), io)
	}
	for _, m := range mounts {
		pm, err := docker.ParseMount(m)
		if err != nil {
			fmt.Fprintln(io.err, "pi-sandbox up:", err)
			return 2
		}
		cfg.Mounts = append(cfg.Mounts, pm)
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			fmt.Fprintf(io.err, "pi-sandbox up: label %q: want KEY=VALUE\n", l)
			return 2
		}
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels[k] = v
	}
	id, err := docker.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox up:", err)
		return 1
	}
	fmt.Fprintln(io.out, id)
	return 0
}

// labelMap turns KEY=VALUE flags into a map (bad entries are skipped
// here; runUp reports them for docker).
func labelMap(labels []string) map[string]string {
	m := map[string]string{}
	for _, l := range labels {
		if k, v, ok := strings.Cut(l, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// sizeFlag is a size in bytes: a number with an optional suffix k, m, g
// or t (powers of 1024), or -1.
type sizeFlag int64

func (f *sizeFlag) String() string {
	if *f == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*f), 10)
}

func (f *sizeFlag) Set(v string) error {
	if v == "-1" {
		*f = -1
		return nil
	}
	num, shift := strings.ToLower(v), 0
	for i, u := range []string{"k", "m", "g", "t"} {
		if n, ok := strings.CutSuffix(num, u); ok {
			num, shift = n, 10*(i+1)
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return fmt.Errorf("want a positive size such as 4g, 512m or 1000000 (bytes), or -1 for none")
	}
	*f = sizeFlag(n << shift)
	return nil
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
