package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/pool"
)

// Warm pools: pool fill makes idle members, up --pool claims one by a
// rename (no exec), pool drain removes the idle ones.

// newPool returns a pool name unique to this run and purpose, and the
// flags that label its members for this run; cleanup drains the pool and
// downs every member.
func newPool(t *testing.T, purpose string) (name string, labelFlags []string) {
	t.Helper()
	needImage(t, "pi-sandbox/busybox")
	name = purpose + "-" + runID
	t.Cleanup(func() {
		pi(t, "", "pool", "drain", name)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		members, _ := docker.PoolMembers(ctx, dockerCli, name)
		for _, m := range members {
			docker.Down(ctx, dockerCli, m.ID)
		}
		checkNoContainers(t, "pi-sandbox.test="+purpose)
	})
	return name, []string{"--image", "pi-sandbox/busybox", "--label", runLabel + "=" + runID, "--label", "pi-sandbox.test=" + purpose}
}

// poolFill runs pool fill and returns the ids it printed.
func poolFill(t *testing.T, name string, size int, flags ...string) []string {
	t.Helper()
	args := append([]string{"pool", "fill", name, "--size", strconv.Itoa(size)}, flags...)
	out, errs, code := pi(t, "", args...)
	if code != 0 {
		t.Fatalf("pool fill: code %d, err %s", code, errs)
	}
	return strings.Fields(out)
}

type poolLsRow struct {
	Name          string
	Idle, Claimed int
}

// poolLs returns pool ls --json's row of name (zero when not listed) and
// whether it was listed.
func poolLs(t *testing.T, name string) (poolLsRow, bool) {
	t.Helper()
	out, errs, code := pi(t, "", "pool", "ls", "--json", name)
	var rows []poolLsRow
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("pool ls: code %d, out %q, err %s", code, out, errs)
	}
	for _, r := range rows {
		if r.Name == name {
			return r, true
		}
	}
	return poolLsRow{}, false
}

// claim runs up --pool and returns the id (or "") and the exit code.
func claim(t *testing.T, name string, flags ...string) (string, int, string) {
	t.Helper()
	out, errs, code := pi(t, "", append([]string{"up", "--pool", name}, flags...)...)
	return strings.TrimSpace(out), code, errs
}

// TestDockerPoolLifecycle: fill, a second fill tops up only, a claim is a
// fill's member that holds nothing from warming and serves calls, refill,
// a changed configuration replaces the idle members, drain removes them,
// gc leaves idle members alone, and an empty pool is no longer listed.
func TestDockerPoolLifecycle(t *testing.T) {
	t.Parallel()
	name, flags := newPool(t, "pool-life")
	filled := poolFill(t, name, 2, flags...)
	if len(filled) != 2 || len(filled[0]) != 64 {
		t.Fatalf("fill printed %q, want 2 ids", filled)
	}
	if again := poolFill(t, name, 2, flags...); len(again) != 0 {
		t.Fatalf("second fill created %q, want nothing", again)
	}
	if r, _ := poolLs(t, name); r.Idle != 2 || r.Claimed != 0 {
		t.Fatalf("pool ls: %+v, want 2 idle", r)
	}
	// gc leaves idle members alone; gc --all removes them.
	out, _, _ := pi(t, "", "gc", "--dry-run")
	for _, id := range filled {
		if strings.Contains(out, id) {
			t.Fatalf("gc --dry-run would remove idle member %s", id[:12])
		}
	}
	out, _, _ = pi(t, "", "gc", "--dry-run", "--all")
	for _, id := range filled {
		if !strings.Contains(out, id) {
			t.Fatalf("gc --dry-run --all would not remove idle member %s", id[:12])
		}
	}
	id, code, errs := claim(t, name)
	if code != 0 || (id != filled[0] && id != filled[1]) {
		t.Fatalf("claim: code %d, id %q (filled %q), err %s", code, id, filled, errs)
	}
	// Nothing from warming: no file but the helper binary and the
	// daemon's own (its lock and log), no process but the daemon (ps
	// lists the background processes, one JSON line each).
	text, isErr := bashIn(t, id, "find /var/lib/pi-sandbox /tmp -path '*/helper/*' -prune -o -type f ! -name 'pi-sandbox-shim-*' -print 2>&1; echo end")
	if isErr || strings.TrimSpace(text) != "end" {
		t.Fatalf("a claimed member holds files from warming: %q (isError %v)", text, isErr)
	}
	psOut, psErr, code := pi(t, "", "ps", "--container", id, "--json")
	if code != 0 || strings.TrimSpace(psOut) != "" {
		t.Fatalf("ps on a claimed member: code %d, out %q, err %s", code, psOut, psErr)
	}
	if r, _ := poolLs(t, name); r.Idle != 1 || r.Claimed != 1 {
		t.Fatalf("pool ls after a claim: %+v, want 1 idle 1 claimed", r)
	}
	if refill := poolFill(t, name, 2, flags...); len(refill) != 1 {
		t.Fatalf("refill created %q, want 1 id", refill)
	}
	// A changed configuration replaces the idle members, not the claimed.
	changed := poolFill(t, name, 2, append(flags, "--memory", "256m")...)
	if len(changed) != 2 {
		t.Fatalf("fill with a changed configuration created %q, want 2 ids", changed)
	}
	members, err := docker.PoolMembers(context.Background(), dockerCli, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if m.Idle && m.ID != changed[0] && m.ID != changed[1] {
			t.Fatalf("idle member %s of the old configuration stayed", m.ID[:12])
		}
	}
	drained, errs, code := pi(t, "", "pool", "drain", name)
	if code != 0 || len(strings.Fields(drained)) != 2 {
		t.Fatalf("drain: code %d, out %q, err %s", code, drained, errs)
	}
	if r, _ := poolLs(t, name); r.Idle != 0 || r.Claimed != 1 {
		t.Fatalf("pool ls after drain: %+v, want 0 idle 1 claimed", r)
	}
	if _, errs, code := pi(t, "", "down", id); code != 0 {
		t.Fatalf("down: %d %s", code, errs)
	}
	if r, listed := poolLs(t, name); listed {
		t.Fatalf("a drained pool without claimed members is listed: %+v", r)
	}
	// With no member left the pool does not exist.
	if _, code, errs := claim(t, name); code != 2 || !strings.Contains(errs, "no pool "+name) {
		t.Fatalf("claim from an empty pool: code %d, err %s", code, errs)
	}
}

// TestDockerPoolConcurrentClaims: 32 concurrent claims from a pool of 32
// get 32 distinct members.
func TestDockerPoolConcurrentClaims(t *testing.T) {
	t.Parallel()
	const n = 32
	name, flags := newPool(t, "pool-conc")
	filled := poolFill(t, name, n, flags...)
	ids := claimAll(t, name, n, "--no-cold")
	if len(ids) != n {
		t.Fatalf("%d of %d claims won", len(ids), n)
	}
	for _, id := range filled {
		if !ids[id] {
			t.Fatalf("member %s was not claimed", id[:12])
		}
	}
}

// TestDockerPoolRace: 200 claimers race over a pool of 16 with --no-cold:
// exactly 16 distinct winners, the rest refused with the reason.
func TestDockerPoolRace(t *testing.T) {
	t.Parallel()
	name, flags := newPool(t, "pool-race")
	poolFill(t, name, 16, flags...)
	if ids := claimAll(t, name, 200, "--no-cold"); len(ids) != 16 {
		t.Fatalf("%d distinct winners, want 16", len(ids))
	}
}

// claimAll runs n claims at once and returns the distinct ids won; a
// refusal must be the empty pool's.
func claimAll(t *testing.T, name string, n int, flags ...string) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	ids := map[string]bool{}
	wins := 0
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, code, errs := claim(t, name, flags...)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case code == 0 && len(id) == 64:
				wins++
				ids[id] = true
			case code == 1 && strings.Contains(errs, "no idle member left"):
			default:
				t.Errorf("claim: code %d, out %q, err %s", code, id, errs)
			}
		}()
	}
	wg.Wait()
	if wins != len(ids) {
		t.Fatalf("%d claims won %d distinct members: one was handed out twice", wins, len(ids))
	}
	return ids
}

// TestDockerPoolRefusals: a missing image or runtime and --mount fail with
// exit 2 before anything is created; draining an unknown pool is exit 0;
// --pool with a configuration flag is a usage error.
func TestDockerPoolRefusals(t *testing.T) {
	t.Parallel()
	name, flags := newPool(t, "pool-refuse")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--image", "pi-sandbox/no-such-image"}, "is not on the engine"},
		{[]string{"--runtime", "no-such-runtime"}, `no runtime "no-such-runtime"`},
		{[]string{"--mount", t.TempDir() + ":/x"}, "--mount is refused"},
	} {
		args := append(append([]string{"pool", "fill", name, "--size", "1"}, flags...), c.args...)
		out, errs, code := pi(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("pool fill %q: code %d, out %q, err %s", c.args, code, out, errs)
		}
	}
	if r, listed := poolLs(t, name); listed {
		t.Fatalf("a refused fill created members: %+v", r)
	}
	if out, errs, code := pi(t, "", "pool", "drain", name); code != 0 || out != "" {
		t.Fatalf("drain of an unknown pool: code %d, out %q, err %s", code, out, errs)
	}
	if _, code, errs := claim(t, name, "--image", "pi-sandbox/busybox"); code != 2 || !strings.Contains(errs, "--image with --pool") {
		t.Fatalf("up --pool --image: code %d, err %s", code, errs)
	}
}

// TestDockerPoolDeadMember: an idle member that stopped is never handed
// out: the claim removes it and, with --no-cold, is refused.
func TestDockerPoolDeadMember(t *testing.T) {
	t.Parallel()
	name, flags := newPool(t, "pool-dead")
	filled := poolFill(t, name, 1, flags...)
	if len(filled) != 1 {
		t.Fatalf("fill printed %q", filled)
	}
	if _, err := dockerCli.ContainerKill(context.Background(), filled[0], client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	if id, code, errs := claim(t, name, "--no-cold"); code != 1 || id != "" || !strings.Contains(errs, "no idle member left") {
		t.Fatalf("claim over a dead member: code %d, id %q, err %s", code, id, errs)
	}
	if _, err := dockerCli.ContainerInspect(context.Background(), filled[0], client.ContainerInspectOptions{}); err == nil {
		t.Fatalf("the dead member %s was not removed", filled[0][:12])
	}
}

// TestDockerPoolGoAPI: sandbox/pool fills, claims a sandbox that serves a
// call, and the sandbox's Close removes the container; Drain empties the
// pool.
func TestDockerPoolGoAPI(t *testing.T) {
	t.Parallel()
	name, _ := newPool(t, "pool-api")
	ctx := t.Context()
	p := &pool.Pool{Name: name, Size: 1, NoCold: true, Config: docker.Config{Image: "pi-sandbox/busybox",
		Labels: map[string]string{runLabel: runID, "pi-sandbox.test": "pool-api"}}}
	ids, err := p.Fill(ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("Fill = %q, %v", ids, err)
	}
	sb, err := p.Claim(ctx, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Call(ctx, "bash", map[string]any{"command": "echo claimed"})
	if err != nil || res.Text() != "claimed\n" {
		t.Fatalf("bash: %v, %v", res, err)
	}
	if _, err := p.Claim(ctx, sandbox.Config{}); !errors.Is(err, docker.ErrPoolEmpty) {
		t.Fatalf("a second claim with NoCold: %v, want ErrPoolEmpty", err)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := dockerCli.ContainerInspect(ctx, ids[0], client.ContainerInspectOptions{}); err == nil {
		t.Fatal("Close left the claimed container")
	}
}

// TestDockerPoolKeep: pool keep fills the pool, refills it after a claim
// (printing each new id) and exits 0 on SIGINT.
func TestDockerPoolKeep(t *testing.T) {
	t.Parallel()
	name, flags := newPool(t, "pool-keep")
	if piBin == "" {
		skipOrFail(t, "no pi-sandbox binary")
	}
	cmd := exec.Command(piBin, append([]string{"pool", "keep", name, "--size", "1", "--interval", "100ms"}, flags...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("pool keep ended: %v; stderr %s", cmd.Wait(), errb.String())
		}
		return lines.Text()
	}
	first := next()
	if id, code, errs := claim(t, name, "--no-cold"); code != 0 || id != first {
		t.Fatalf("claim: code %d, id %q, want %q; err %s", code, id, first, errs)
	}
	if second := next(); len(second) != 64 || second == first {
		t.Fatalf("refill printed %q", second)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pool keep after SIGINT: %v; stderr %s", err, errb.String())
	}
}
