package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

func init() {
	register("ls", &command{summary: "list pi-sandbox containers (--backend k8s: pods)", run: runLs})
}

// labelOwner is the label `up` puts on a docker sandbox: USER@HOST of the
// person who made it. An ephemeral container records its creating process
// instead (docker.LabelHost, docker.LabelPID).
const labelOwner = "pi-sandbox.owner"

// lsFormat is how ls prints its list.
type lsFormat int

const (
	lsTable lsFormat = iota
	lsQuiet          // ids only
	lsJSON           // one JSON array
)

// lsRow is one sandbox in `ls --json` and the table.
type lsRow struct {
	ID      string            `json:"id"`
	Image   string            `json:"image"`
	Kind    string            `json:"kind"`
	State   string            `json:"state"`
	Created time.Time         `json:"created"`
	Owner   string            `json:"owner"`
	Labels  map[string]string `json:"labels"`
	// Remaining is the time left before the sandbox's lifetime (up
	// --ttl/--idle-timeout) ends it, in seconds; null without one.
	Remaining *float64 `json:"remaining_seconds"`
}

// runLs is `pi-sandbox ls [-q | --json]`: every container carrying our
// label, the long-lived sandboxes and any ephemeral ones in use (or leaked).
func runLs(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("ls", "[flags]", io)
	f.about = "Lists the sandboxes pi-sandbox made: up's long-lived ones and the ephemeral ones of\nrunning (or leaked) sessions. OWNER is who made it (up: USER@HOST; ephemeral: HOST:PID\nof the creating process); LABELS are the --label labels of up; REMAINING is the time\nbefore the sandbox's lifetime (up --ttl, --idle-timeout) ends it."
	quiet := f.Bool("q", false, "print ids only")
	asJSON := f.Bool("json", false, "print one JSON array of {id, image, kind, state, created, owner, labels, remaining_seconds} ([] when there is none)")
	var kf k8sFlags
	kf.register(f.FlagSet)
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	switch {
	case len(rest) != 0:
		return f.usageError("takes no arguments")
	case *quiet && *asJSON:
		return f.usageError("-q and --json exclude each other")
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	format := lsTable
	if *quiet {
		format = lsQuiet
	} else if *asJSON {
		format = lsJSON
	}
	if kf.backend == "k8s" {
		return lsK8s(ctx, &kf, format, io)
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox ls:", err)
		return 1
	}
	defer cli.Close()
	list, err := docker.List(ctx, cli)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox ls:", err)
		return 1
	}
	rows := make([]lsRow, 0, len(list))
	for _, s := range list {
		r := lsRow{ID: s.ID, Image: s.Image, Kind: s.Kind, State: s.State, Created: s.Created,
			Owner: owner(s.Labels, docker.LabelHost, docker.LabelPID), Labels: userLabels(s.Labels)}
		if d, ok := docker.Remaining(ctx, cli, s); ok {
			sec := d.Seconds()
			r.Remaining = &sec
		}
		rows = append(rows, r)
	}
	return printLs(rows, format, "ID", 12, io)
}

// printLs prints rows as ids, a JSON array or a table whose first column
// is idHeader (ids cut to idWidth characters when it is not 0).
func printLs(rows []lsRow, format lsFormat, idHeader string, idWidth int, io stdio) int {
	switch format {
	case lsQuiet:
		for _, r := range rows {
			fmt.Fprintln(io.out, r.ID)
		}
		return 0
	case lsJSON:
		if rows == nil {
			rows = []lsRow{} // [] when there is none
		}
		b, err := json.Marshal(rows)
		if err != nil {
			fmt.Fprintln(io.err, "pi-sandbox ls:", err)
			return 1
		}
		io.out.Write(append(escapeJSONControls(b), '\n'))
		return 0
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tIMAGE\tKIND\tSTATE\tCREATED\tREMAINING\tOWNER\tLABELS\n", idHeader)
	for _, r := range rows {
		id := r.ID
		if idWidth > 0 && len(id) > idWidth {
			id = id[:idWidth]
		}
		labels := "-"
		if len(r.Labels) > 0 {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
				kv = append(kv, k+"="+r.Labels[k])
			}
			labels = strings.Join(kv, ",")
		}
		remaining := "-"
		if r.Remaining != nil {
			remaining = time.Duration(*r.Remaining * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\t%s\t%s\t%s\n", escapeControls(id, false), escapeControls(r.Image, false), escapeControls(r.Kind, false),
			escapeControls(r.State, false), time.Since(r.Created).Round(time.Second), remaining, escapeControls(orDash(r.Owner), false), escapeControls(labels, false))
	}
	tw.Flush()
	return 0
}

// owner is who made a sandbox, from its labels: up's owner label, else the
// HOST:PID of the process that made an ephemeral one, else "".
func owner(labels map[string]string, hostLabel, pidLabel string) string {
	if o := labels[labelOwner]; o != "" {
		return o
	}
	if h, p := labels[hostLabel], labels[pidLabel]; h != "" && p != "" {
		return h + ":" + p
	}
	return ""
}

// userLabels are the labels not set by pi-sandbox itself (up's --label).
func userLabels(labels map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range labels {
		if !strings.HasPrefix(k, "pi-sandbox.") {
			m[k] = v
		}
	}
	return m
}

// ownerValue is the owner label's value for a sandbox this process makes:
// USER@HOST.
func ownerValue() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
