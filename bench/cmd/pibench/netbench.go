package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
)

// netStats is the network section (docker runc): the `port`
// tunnel's latency and bulk rate against a port published by docker, the
// egress proxy's latency against a request that stays in the target, and
// the RSS of the `port` process during a long transfer.
type netStats struct {
	Image string   `json:"image"`
	Rows  []netRow `json:"rows,omitempty"`
	Err   string   `json:"error,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// netRow is one measured row: Value is a p50 in ms, a rate in MB/s or a
// size in MiB (Unit says which), beside its baseline's.
type netRow struct {
	Name      string  `json:"name"` // short, for the targets table
	Op        string  `json:"op"`
	Unit      string  `json:"unit"`
	N         int     `json:"n"`
	Value     float64 `json:"value"`
	P95       float64 `json:"p95Ms,omitempty"`
	Baseline  string  `json:"baseline"`
	BaseValue float64 `json:"baselineValue,omitempty"`
	BaseP95   float64 `json:"baselineP95Ms,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	Target    string  `json:"target"`
	Status    string  `json:"status"`
	Errs      int     `json:"errors,omitempty"`
	Err       string  `json:"firstError,omitempty"`
}

const (
	netLatTarget    = 1.5 // tunnel and egress p50 ÷ baseline p50
	netBulkTarget   = 0.5 // tunnel MB/s ÷ published port MB/s
	netRSSTargetMiB = 64  // VmHWM of `pi-sandbox port`
	netPort         = 8080
	netSrv          = "/tmp/srv"
	netLoop         = 20 // wget requests per bash call in the egress loop row
	netLoopRounds   = 5
)

// netBench runs the network section. The containers it starts carry
// benchLabel and are removed before it returns.
func netBench(ctx context.Context, o *options, p *progress) *netStats {
	ns := &netStats{Image: o.poolImage}
	n, bulk, rssTotal := 100, int64(64<<20), int64(1<<30)
	if o.quick {
		n, bulk, rssTotal = 20, 16<<20, 256<<20
	}
	label := benchLabel + "=" + strconv.Itoa(os.Getpid())
	setup := fmt.Sprintf("mkdir -p %s && head -c 1024 /dev/urandom > %[1]s/1k && head -c %d /dev/urandom > %[1]s/bulk", netSrv, bulk)
	cleanup := func(what string, f func(context.Context) error) {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := f(dctx); err != nil {
			ns.Notes = append(ns.Notes, what+": "+err.Error())
		}
	}

	// Baseline: the same server in a container on the default bridge, its
	// port published on the host's loopback by docker.
	p.step("network: baseline container (docker run -p)")
	bctx, bcancel := context.WithTimeout(ctx, 2*time.Minute)
	out, err := runExt2(bctx, "docker", "run", "-d", "--label", label, "-p", fmt.Sprintf("127.0.0.1::%d", netPort), o.poolImage,
		"sh", "-c", fmt.Sprintf("%s && exec httpd -f -p %d -h %s", setup, netPort, netSrv))
	bcancel()
	baseID := strings.TrimSpace(out)
	if baseID != "" {
		defer cleanup("remove baseline container", func(c context.Context) error {
			_, err := runExt(c, nil, "docker", "rm", "-f", baseID)
			return err
		})
	}
	if err != nil {
		ns.Err = "baseline container: " + err.Error()
		return ns
	}
	bctx, bcancel = context.WithTimeout(ctx, 30*time.Second)
	out, err = runExt2(bctx, "docker", "port", baseID, fmt.Sprintf("%d/tcp", netPort))
	bcancel()
	baseAddr := publishedAddr(out)
	if err != nil || baseAddr == "" {
		ns.Err = fmt.Sprintf("docker port: %v %q", err, out)
		return ns
	}

	// The sandbox: `up` (no network), httpd started in it by a tool call.
	p.step("network: up --image %s, httpd in it", o.poolImage)
	out, err = piCmd(ctx, o, "up", "--image", o.poolImage, "--label", label)
	id := firstLine(out)
	if err != nil || id == "" {
		ns.Err = fmt.Sprintf("up: %v", err)
		return ns
	}
	defer cleanup("down "+id[:min(12, len(id))], func(c context.Context) error {
		_, err := piCmd(c, o, "down", id)
		return err
	})
	if _, err := piCmd(ctx, o, "tool", "--container", id, "bash",
		jsonCmd(fmt.Sprintf("%s && httpd -p %d -h %s", setup, netPort, netSrv))); err != nil {
		ns.Err = "httpd in the sandbox: " + err.Error()
		return ns
	}

	p.step("network: pi-sandbox port --container ID %d", netPort)
	pf, err := startPort(ctx, o, id, netPort)
	if err != nil {
		ns.Err = err.Error()
		return ns
	}
	defer cleanup("stop port", pf.stop)

	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
	for _, a := range []string{baseAddr, pf.addr} {
		if err := waitHTTP(ctx, client, "http://"+a+"/1k", 30*time.Second); err != nil {
			ns.Err = err.Error()
			return ns
		}
	}

	// 1. Tunnel latency, the two interleaved, a new connection per request.
	p.step("network: 1 KiB GET through port vs published ×%d", n)
	tds, bds, terr := pairs(p, "network lat", n, func() error { return get(ctx, client, "http://"+pf.addr+"/1k", 1024) },
		func() error { return get(ctx, client, "http://"+baseAddr+"/1k", 1024) })
	ns.Rows = append(ns.Rows, latRow("tunnel: 1 KiB GET", "tunnel: 1 KiB HTTP GET (busybox httpd, new TCP connection each) through `pi-sandbox port --container ID 8080` into an `up` sandbox (no network)",
		fmt.Sprintf("the same GET to `docker run -p 127.0.0.1::%d` (bridge network, published port)", netPort), tds, bds, terr))

	// 2. Tunnel bulk: the median of 3 downloads each.
	p.step("network: %d MiB download through port vs published ×3", bulk>>20)
	var tr, br []float64
	var berr error
	for range 3 {
		if v, err := rate(ctx, client, "http://"+pf.addr+"/bulk", bulk); err != nil {
			berr = err
		} else {
			tr = append(tr, v)
		}
		if v, err := rate(ctx, client, "http://"+baseAddr+"/bulk", bulk); err != nil {
			berr = err
		} else {
			br = append(br, v)
		}
	}
	r := netRow{Name: fmt.Sprintf("tunnel: %d MiB download", bulk>>20), Op: fmt.Sprintf("tunnel: %d MiB HTTP download through `port` (median of 3)", bulk>>20), Unit: "MB/s", N: len(tr),
		Value: median(tr), Baseline: "the same download from the published port", BaseValue: median(br),
		Target: fmt.Sprintf("≥ %g× baseline", netBulkTarget)}
	r.Ratio = ratio(r.Value, r.BaseValue)
	r.Status = statusN(len(tr) > 0 && len(br) > 0, r.Ratio >= netBulkTarget)
	errInto(&r, berr, 6-len(tr)-len(br))
	ns.Rows = append(ns.Rows, r)

	// 4. The port process's RSS over rssTotal bytes (sequential downloads).
	p.step("network: %d MiB through port, its VmHWM", rssTotal>>20)
	var moved int64
	var rerr error
	for moved < rssTotal && ctx.Err() == nil {
		if _, err := rate(ctx, client, "http://"+pf.addr+"/bulk", bulk); err != nil {
			rerr = err
			break
		}
		moved += bulk
	}
	hwm := float64(vmHWMOf(strconv.Itoa(pf.cmd.Process.Pid))) / 1024
	var herr error
	if hwm == 0 {
		herr = fmt.Errorf("pibench: no VmHWM for pi-sandbox port (pid %d)", pf.cmd.Process.Pid)
	}
	r = netRow{Name: fmt.Sprintf("`port` peak RSS over %d MiB", moved>>20), Op: fmt.Sprintf("`port` process peak RSS (VmHWM) after %d MiB through it (%d MiB downloads in sequence, after rows 1–2)", moved>>20, bulk>>20),
		Unit: "MiB", N: int(moved / bulk), Value: hwm, Baseline: "absolute", Target: fmt.Sprintf("≤ %d MiB", netRSSTargetMiB)}
	r.Status = statusN(herr == nil && moved >= rssTotal, hwm <= netRSSTargetMiB)
	if herr != nil {
		rerr = herr
	}
	errInto(&r, rerr, 1)
	ns.Rows = append(ns.Rows, r)

	ns.Rows = append(ns.Rows, egressRows(ctx, o, p, id, n, bulk)...)
	return ns
}

// egressRows time a bash call running wget through the session's egress
// proxy to a server on the host's loopback against the same call running
// wget to the httpd on the target's own loopback: the difference is the
// proxy's path (the helper stream, the host's policy check and dial). A
// second row loops the requests in one call, so the helper round trip of
// the call weighs 1/netLoop of each sample. A third row downloads bulk
// bytes each way (the target's httpd serves a file of that size).
func egressRows(ctx context.Context, o *options, p *progress, id string, n int, bulk int64) []netRow {
	row := netRow{Name: "egress: 1 KiB GET, one bash call each", Op: "egress: bash call `NO_PROXY= no_proxy= wget -q -O /dev/null http://127.0.0.1:PORT/1k` in the `up` sandbox through its session proxy (Go API, Policy.Network.Allow) to a 1 KiB Go server on the host's loopback",
		Unit: "ms", Baseline: fmt.Sprintf("the same bash call, `wget -Y off` (busybox wget ignores no_proxy) direct to the httpd on the target's own 127.0.0.1:%d (a helper round trip + wget + a direct request)", netPort),
		Target: fmt.Sprintf("p50 ≤ %g× baseline p50", netLatTarget), Status: "not measured"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		errInto(&row, err, 1)
		return []netRow{row}
	}
	body, big := make([]byte, 1024), make([]byte, bulk)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// With its length, as the target's httpd sends a file (not
		// chunked).
		if r.URL.Path == "/bulk" {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Write(big)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	hostAddr := ln.Addr().String()

	p.step("network: egress sandbox (Go API, allow %s)", hostAddr)
	octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, err := docker.New(octx, docker.Config{Container: id, ShimBinary: o.shim})
	if err != nil {
		errInto(&row, err, 1)
		return []netRow{row}
	}
	sb, err := sandbox.OpenBackend(octx, b, sandbox.Config{Policy: sandbox.Policy{Network: sandbox.NetworkPolicy{Allow: []string{hostAddr}}}})
	if err != nil {
		b.Close()
		errInto(&row, err, 1)
		return []netRow{row}
	}
	defer sb.Close()
	call := func(cmd string) func() error {
		return func() error {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			res, err := sb.Call(cctx, "bash", map[string]any{"command": cmd})
			if err == nil && res.IsError {
				err = fmt.Errorf("bash %q: %.300s", cmd, resultText(res))
			}
			return err
		}
	}
	p.step("network: egress wget vs target-local wget ×%d", n)
	egressGet := "NO_PROXY= no_proxy= wget -q -O /dev/null http://" + hostAddr + "/1k"
	directGet := fmt.Sprintf("wget -Y off -q -O /dev/null http://127.0.0.1:%d/1k", netPort)
	eds, bds, err := pairs(p, "network egress", n, call(egressGet), call(directGet))
	rows := []netRow{latRow(row.Name, row.Op, row.Baseline, eds, bds, err)}

	// The same requests looped in one bash call: the helper round trip
	// spread over netLoop requests, each sample the loop's time ÷ netLoop.
	loop := func(get string) string {
		return fmt.Sprintf("i=0; while [ $i -lt %d ]; do %s || exit 1; i=$((i+1)); done", netLoop, get)
	}
	p.step("network: egress loops of %d wget ×%d", netLoop, netLoopRounds)
	eds, bds, err = pairs(p, "network egress loop", netLoopRounds, call(loop(egressGet)), call(loop(directGet)))
	per := func(ds []time.Duration) []time.Duration {
		for i := range ds {
			ds[i] /= netLoop
		}
		return ds
	}
	r := latRow(fmt.Sprintf("egress: 1 KiB GET, %d looped in one bash call", netLoop), fmt.Sprintf("egress: the same wget through the proxy, %d in a loop in one bash call (sample = loop time ÷ %d)", netLoop, netLoop),
		"the same loop of direct `wget -Y off` to the target's own httpd", per(eds), per(bds), err)
	rows = append(rows, r)

	// Bulk: one download of bulk bytes per bash call, the median of 3
	// each, as a rate over the call's time.
	p.step("network: egress %d MiB download vs target-local ×3", bulk>>20)
	eds, bds, err = pairs(p, "network egress bulk", 3,
		call("NO_PROXY= no_proxy= wget -q -O /dev/null http://"+hostAddr+"/bulk"),
		call(fmt.Sprintf("wget -Y off -q -O /dev/null http://127.0.0.1:%d/bulk", netPort)))
	rates := func(ds []time.Duration) []float64 {
		var v []float64
		for _, d := range ds {
			v = append(v, float64(bulk)/d.Seconds()/1e6)
		}
		return v
	}
	er, br := rates(eds), rates(bds)
	r = netRow{Name: fmt.Sprintf("egress: %d MiB download", bulk>>20), Op: fmt.Sprintf("egress: bash call `wget -q -O /dev/null` of %d MiB through the session proxy from the Go server on the host's loopback (median of 3; rate over the call's time)", bulk>>20), Unit: "MB/s", N: len(er),
		Value: median(er), Baseline: "the same bash call, `wget -Y off` of the same size from the target's own httpd", BaseValue: median(br),
		Target: fmt.Sprintf("≥ %g× baseline", netBulkTarget)}
	r.Ratio = ratio(r.Value, r.BaseValue)
	r.Status = statusN(len(er) > 0 && len(br) > 0, r.Ratio >= netBulkTarget)
	errInto(&r, err, 6-len(er)-len(br))
	return append(rows, r)
}

// portProc is a running `pi-sandbox port`.
type portProc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// startPort starts `pi-sandbox port --container ID PORT` and reads the
// address from its first stdout line (within 60 s).
func startPort(ctx context.Context, o *options, id string, port int) (*portProc, error) {
	cmd := exec.Command(o.bin, "port", "--container", id, strconv.Itoa(port))
	var errb strings.Builder
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pi-sandbox port: %w", err)
	}
	pp := &portProc{cmd: cmd, done: make(chan struct{})}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
		io.Copy(io.Discard, stdout)
	}()
	go func() { cmd.Wait(); close(pp.done) }()
	select {
	case pp.addr = <-line:
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
	}
	if pp.addr == "" {
		pp.stop(context.Background())
		return nil, fmt.Errorf("pi-sandbox port: no address on stdout: %s", firstLine(errb.String()))
	}
	return pp, nil
}

// stop sends SIGTERM, then SIGKILL after 10 s.
func (pp *portProc) stop(ctx context.Context) error {
	pp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pp.done:
		return nil
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	pp.cmd.Process.Kill()
	<-pp.done
	return fmt.Errorf("pi-sandbox port: killed, SIGTERM not honoured in 10 s")
}

// pairs runs a and b alternately n times (after one warm-up of each) and
// returns their successful durations and the first error.
func pairs(p *progress, label string, n int, a, b func() error) (ads, bds []time.Duration, first error) {
	timed := func(f func() error, ds *[]time.Duration) {
		t := time.Now()
		if err := f(); err != nil {
			if first == nil {
				first = err
			}
			return
		}
		*ds = append(*ds, time.Since(t))
	}
	if err := a(); err != nil {
		return nil, nil, err
	}
	if err := b(); err != nil {
		return nil, nil, err
	}
	for i := range n {
		timed(a, &ads)
		timed(b, &bds)
		p.tick(label, i+1, n)
	}
	return ads, bds, first
}

func latRow(name, op, base string, ds, bds []time.Duration, err error) netRow {
	s, bs := summarize(ds), summarize(bds)
	r := netRow{Name: name, Op: op, Unit: "ms", N: s.N, Value: s.P50Ms, P95: quantile(ds, 0.95), Baseline: base,
		BaseValue: bs.P50Ms, BaseP95: quantile(bds, 0.95), Target: fmt.Sprintf("p50 ≤ %g× baseline p50", netLatTarget)}
	r.Ratio = ratio(r.Value, r.BaseValue)
	r.Status = statusN(s.N > 0 && bs.N > 0, r.Ratio <= netLatTarget)
	errInto(&r, err, 1)
	return r
}

func errInto(r *netRow, err error, count int) {
	if err != nil {
		r.Errs, r.Err = max(count, 1), err.Error()
	}
}

func statusN(measured, ok bool) string {
	if !measured {
		return "not measured"
	}
	return verdict(ok)
}

// get fetches url and checks it got want bytes.
func get(ctx context.Context, c *http.Client, url string, want int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	if err == nil && (resp.StatusCode != http.StatusOK || got != want) {
		err = fmt.Errorf("GET %s: status %d, %d bytes (want %d)", url, resp.StatusCode, got, want)
	}
	return err
}

// rate downloads url (want bytes) and returns MB/s (10^6 bytes).
func rate(ctx context.Context, c *http.Client, url string, want int64) (float64, error) {
	t := time.Now()
	if err := get(ctx, c, url, want); err != nil {
		return 0, err
	}
	return float64(want) / 1e6 / time.Since(t).Seconds(), nil
}

// waitHTTP polls url until it answers 200, for at most d.
func waitHTTP(ctx context.Context, c *http.Client, url string, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		err := get(ctx, c, url, 1024)
		if err == nil {
			return nil
		}
		if time.Now().After(end) || ctx.Err() != nil {
			return fmt.Errorf("server not ready in %s: %w", d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// publishedAddr takes the IPv4 line of `docker port` output.
func publishedAddr(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "127.0.0.1:") {
			return l
		}
	}
	return ""
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func jsonCmd(cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return string(b)
}
