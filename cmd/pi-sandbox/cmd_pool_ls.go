package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// poolRow is one pool in pool ls.
type poolRow struct {
	Name    string `json:"name"`
	Idle    int    `json:"idle"`
	Claimed int    `json:"claimed"`
	// OldestIdle and NewestIdle are the ages in seconds of the oldest and
	// newest idle member (absent without one).
	OldestIdle *int64 `json:"oldest_idle_seconds,omitempty"`
	NewestIdle *int64 `json:"newest_idle_seconds,omitempty"`
}

// age formats an age in seconds for the table ("-" for none).
func age(s *int64) string {
	if s == nil {
		return "-"
	}
	return (time.Duration(*s) * time.Second).String()
}

// runPoolLs is `pi-sandbox pool ls [NAME] [--json]`.
func runPoolLs(ctx context.Context, args []string, io stdio) int {
	f := newFlagSet("pool ls", "[flags] [NAME]", io)
	f.about = "Lists the pools (or pool NAME): idle and claimed members and the idle members' ages."
	asJSON := f.Bool("json", false, "print one JSON array")
	var kf k8sFlags
	kf.register(f.FlagSet)
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if msg := kf.check(); msg != "" {
		return f.usageError("%s", msg)
	}
	if kf.backend == "k8s" {
		return poolLsK8s(ctx, f, &kf, rest, *asJSON, io)
	}
	name := ""
	if len(rest) > 1 {
		return f.usageError("want at most one pool NAME")
	}
	if len(rest) == 1 {
		name = rest[0]
		if err := docker.CheckPoolName(name); err != nil {
			return f.usageError("%v", err)
		}
	}
	cli, err := docker.NewClient()
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool ls:", err)
		return 1
	}
	defer cli.Close()
	members, err := docker.PoolMembers(ctx, cli, name)
	if err != nil {
		fmt.Fprintln(io.err, "pi-sandbox pool ls:", err)
		return 1
	}
	rows := map[string]*poolRow{}
	oldest, newest := map[string]time.Time{}, map[string]time.Time{}
	for _, m := range members {
		p := m.Labels[docker.LabelPool]
		r := rows[p]
		if r == nil {
			r = &poolRow{Name: p}
			rows[p] = r
		}
		if !m.Idle {
			r.Claimed++
			continue
		}
		r.Idle++
		if o, ok := oldest[p]; !ok || m.Created.Before(o) {
			oldest[p] = m.Created
		}
		if n, ok := newest[p]; !ok || m.Created.After(n) {
			newest[p] = m.Created
		}
	}
	out := []poolRow{}
	for p, r := range rows {
		if t, ok := oldest[p]; ok {
			o, n := int64(time.Since(t)/time.Second), int64(time.Since(newest[p])/time.Second)
			r.OldestIdle, r.NewestIdle = &o, &n
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if *asJSON {
		b, _ := json.Marshal(out)
		fmt.Fprintln(io.out, string(b))
		return 0
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tIDLE\tCLAIMED\tOLDEST IDLE\tNEWEST IDLE")
	for _, r := range out {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Name, r.Idle, r.Claimed, age(r.OldestIdle), age(r.NewestIdle))
	}
	tw.Flush()
	return 0
}
