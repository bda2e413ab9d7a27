package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// The k8s variants of up, down, ls, gc and doctor (--backend k8s).

// client-go logs through klog to stderr (watch and stream errors the
// backend handles itself): not on a user's terminal.
func init() { klog.SetLogger(logr.Discard()) }

// k8sFlags are the cluster flags of those commands.
type k8sFlags struct {
	backend                        string
	kubeconfig, context, namespace string
}

func (f *k8sFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "docker", "`BACKEND`: docker or k8s")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "k8s: kubeconfig `FILE` (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "k8s: kubeconfig context `NAME` (default its current context)")
	fs.StringVar(&f.namespace, "namespace", "", "k8s: namespace `NS` (default the context's, else default)")
}

// check returns what is wrong with the flags ("" when nothing): a
// --backend other than docker and k8s, or cluster flags without k8s.
func (f *k8sFlags) check() string {
	switch {
	case f.backend != "docker" && f.backend != "k8s":
		return fmt.Sprintf("--backend %q: want docker or k8s", f.backend)
	case f.backend != "k8s" && (f.kubeconfig != "" || f.context != "" || f.namespace != ""):
		return "--kubeconfig, --context and --namespace need --backend k8s"
	}
	return ""
}

func (f *k8sFlags) config() k8s.Config {
	return k8s.Config{Kubeconfig: f.kubeconfig, Context: f.context, Namespace: f.namespace}
}

func (f *k8sFlags) client(cmd string, io stdio) (*k8s.Client, bool) {
	c, err := k8s.NewClient(f.config())
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox %s: %v\n", cmd, err)
		return nil, false
	}
	return c, true
}

// upK8s creates a long-lived pod and prints its name.
func upK8s(ctx context.Context, f *k8sFlags, image, workdir, user string, mounts []string, labels map[string]string, io stdio) int {
	cfg := f.config()
	cfg.Image, cfg.WorkDir, cfg.User, cfg.Labels = image, workdir, user, labels
	for _, m := range mounts {
		pm, err := k8s.ParseMount(m)
		if err != nil {
			fmt.Fprintln(io.err, "pi-sandbox up:", err)
			return 2
		}
		cfg.Mounts = append(cfg.Mounts, pm)
	}
	cfg.Note = noteTo("up", io)
	cfg.AllowRoot = strings.HasPrefix(user, "0:") || user == "0" // an explicit uid 0 is the relaxation
	name, err := k8s.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox up:", err)
		return openExitCode(err)
	}
	fmt.Fprintln(io.out, name)
	return 0
}

// downK8s deletes our pods, each returning once it is gone.
func downK8s(ctx context.Context, f *k8sFlags, names []string, io stdio) int {
	c, ok := f.client("down", io)
	if !ok {
		return 1
	}
	code := 0
	for _, n := range names {
		if err := k8s.Down(ctx, c, n); err != nil {
			fmt.Fprintln(io.err, "pi-sandbox down:", err)
			code = 1
			continue
		}
		fmt.Fprintln(io.out, n)
	}
	return code
}

func lsK8s(ctx context.Context, f *k8sFlags, format lsFormat, io stdio) int {
	c, ok := f.client("ls", io)
	if !ok {
		return 1
	}
	list, err := k8s.List(ctx, c)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox ls:", err)
		return 1
	}
	rows := make([]lsRow, 0, len(list))
	for _, s := range list {
		rows = append(rows, lsRow{ID: s.Name, Image: s.Image, Kind: s.Kind, State: s.Status, Created: s.Created,
			Owner: owner(s.Labels, k8s.LabelHost, k8s.LabelPID), Labels: userLabels(s.Labels)})
	}
	return printLs(rows, format, "POD", 0, io)
}

// gcK8s deletes our leaked pods (every one with all) and prints their
// names; with dryRun it prints them and deletes nothing.
func gcK8s(ctx context.Context, f *k8sFlags, all, dryRun bool, maxAge time.Duration, io stdio) int {
	c, ok := f.client("gc", io)
	if !ok {
		return 1
	}
	if dryRun {
		list, err := k8s.List(ctx, c)
		if err != nil {
			fmt.Fprintln(io.err, "pi-sandbox gc:", err)
			return 1
		}
		for _, s := range list {
			if all || k8s.Leaked(s, maxAge) {
				fmt.Fprintln(io.out, s.Name)
			}
		}
		fmt.Fprintln(io.err, "pi-sandbox gc: dry run: nothing deleted")
		return 0
	}
	removed, err := k8s.GC(ctx, c, all, maxAge)
	for _, n := range removed {
		fmt.Fprintln(io.out, n)
	}
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox gc:", err)
		return 1
	}
	return 0
}

// doctorK8s is `pi-sandbox doctor --backend k8s [--image IMAGE]`: the API
// server, the permissions (SelfSubjectAccessReview), a pod with the image
// starting, agent-sandbox for pools (its CRDs and controller), and the
// shim.
func doctorK8s(ctx context.Context, f *k8sFlags, image string, io stdio) int {
	code := 0
	line := func(name, detail string, err error) {
		if err != nil {
			fmt.Fprintf(io.out, "FAIL  %-8s %s\n", name, escapeControls(err.Error(), true))
			code = 1
			return
		}
		fmt.Fprintf(io.out, "ok    %-8s %s\n", name, escapeControls(detail, true))
	}
	c, err := k8s.NewClient(f.config())
	if err != nil {
		line("cluster", "", err)
		return 1
	}
	v, err := k8s.ServerVersion(c)
	line("cluster", fmt.Sprintf("%s, Kubernetes %s, context %q, namespace %s", c.REST.Host, v, c.Context, c.Namespace), err)
	if err != nil {
		return 1
	}
	missing, err := k8s.Missing(ctx, c)
	if err == nil && len(missing) > 0 {
		var s []string
		for _, p := range missing {
			s = append(s, p.String())
		}
		err = fmt.Errorf("missing in namespace %s: %s (see deploy/k8s/rbac.yaml)", c.Namespace, strings.Join(s, ", "))
	}
	line("access", "pods create/get/list/watch/delete, pods/exec create", err)
	if err == nil {
		cfg := f.config()
		cfg.Image = image
		tctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		d, userns, err := k8s.TryPod(tctx, cfg)
		cancel()
		detail := fmt.Sprintf("%s started in %s", image, d.Round(10*time.Millisecond))
		if !userns {
			detail += " (no user namespace: hostUsers: false unsupported)"
		}
		line("pod", detail, err)
	}
	pools, err := k8s.AgentSandbox(ctx, c)
	line("pools", "agent-sandbox: "+pools, err)
	detail := ""
	bins, err := shim.FindBinaries("")
	if err == nil {
		detail = helperArches(bins) + "; a pod gets the one of its node's architecture"
	}
	line("shim", detail, err)
	return code
}
