package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// A hostile helper in a container of our own: this program, planted where
// the docker backend looks for a helper a root upload left (a root-owned
// /tmp/pi-sandbox-bin.* directory, the binary execute-only under the
// name of the CLI's helper), says yes to `__shim version` and then, asked
// to serve, answers over HTTP/2 on its stdio in the way hostileMode (a
// file next to it) names: "endless" sends a hello reply that never ends,
// "silent" never answers.

const (
	hostileModeFile = "hostile-mode"
	hostileLog      = "/tmp/pibench-hostile.log"
)

// hostileHelper runs this process as the planted helper when it is one
// (its name is a helper's and the mode file is beside it); it returns
// false otherwise.
func hostileHelper() bool {
	exe, err := os.Executable()
	if err != nil || !strings.HasPrefix(filepath.Base(exe), "pi-sandbox-shim-") {
		return false
	}
	mode, err := os.ReadFile(filepath.Join(filepath.Dir(exe), hostileModeFile))
	if err != nil {
		return false
	}
	if len(os.Args) > 2 && os.Args[2] == "version" {
		fmt.Println("pi-sandbox-shim hostile")
		os.Exit(0)
	}
	// The host's requests are recorded in hostileLog (world-writable:
	// the helper runs as the container's user).
	logf := func(format string, a ...any) {
		if f, err := os.OpenFile(hostileLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666); err == nil {
			fmt.Fprintf(f, format+"\n", a...)
			f.Close()
		}
	}
	h := func(w http.ResponseWriter, r *http.Request) {
		logf("request %s", r.URL.Path)
		if strings.TrimSpace(string(mode)) == "silent" {
			<-r.Context().Done()
			return
		}
		io.WriteString(w, `{"version":1,"build":"`)
		chunk := bytes.Repeat([]byte{'a'}, 32<<10)
		for sent := 0; ; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				logf("sent %d bytes, then %v", sent, err)
				return
			}
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(h), Protocols: proto.Protocols()}
	ln := &oneConn{c: stdioConn{}, done: make(chan struct{})}
	srv.Serve(ln)
	<-ln.done
	os.Exit(0)
	return true
}

// stdioConn is this process's stdin and stdout as a connection.
type stdioConn struct{}

func (stdioConn) Read(p []byte) (int, error)       { return os.Stdin.Read(p) }
func (stdioConn) Write(p []byte) (int, error)      { return os.Stdout.Write(p) }
func (stdioConn) Close() error                     { os.Stdout.Close(); return os.Stdin.Close() }
func (stdioConn) LocalAddr() net.Addr              { return &net.UnixAddr{Name: "stdio", Net: "unix"} }
func (stdioConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Name: "stdio", Net: "unix"} }
func (stdioConn) SetDeadline(time.Time) error      { return nil }
func (stdioConn) SetReadDeadline(time.Time) error  { return nil }
func (stdioConn) SetWriteDeadline(time.Time) error { return nil }

// oneConn hands out one connection, then blocks until closed.
type oneConn struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConn) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *oneConn) Addr() net.Addr { return &net.UnixAddr{Name: "stdio", Net: "unix"} }

// hostileReplies runs a CLI call against a container holding the planted
// helper, once per mode: the call must fail within 15 s with an error
// naming the bound, the CLI's peak RSS under 64 MiB.
func hostileReplies(ctx context.Context, o *options) scenResult {
	exe, err := os.Executable()
	if err != nil {
		return scenResult{Skipped: err.Error()}
	}
	sum, err := fileSHA256(o.shim)
	if err != nil {
		return scenResult{Skipped: "hash the helper: " + err.Error()}
	}
	name := "pi-sandbox-shim-" + sum[:16]
	r := scenResult{Trials: 2}
	var notes []string
	var lats []time.Duration
	for _, c := range []struct{ mode, want string }{
		{"endless", "exceeds 1 MiB"},
		{"silent", "no hello from the helper within"},
	} {
		note, d, fail := hostileTrial(ctx, o, exe, name, c.mode, c.want)
		notes = append(notes, c.mode+": "+note)
		lats = append(lats, d)
		if fail != "" {
			r.Failures++
			if r.FirstFail == "" {
				r.FirstFail = c.mode + ": " + fail
			}
		}
	}
	s := summarize(lats)
	r.P50Ms, r.P99Ms = s.P50Ms, s.P99Ms
	r.Note = "return = the whole call; " + strings.Join(notes, "; ")
	return r
}

func hostileTrial(ctx context.Context, o *options, exe, name, mode, want string) (note string, d time.Duration, fail string) {
	id, err := runExt2(ctx, "docker", "run", "-d", "--rm", "--network", "none", "--label", benchLabel+"="+fmt.Sprint(os.Getpid()), o.image, "sleep", "infinity")
	if err != nil {
		return "", 0, "docker run: " + err.Error()
	}
	id = strings.TrimSpace(id)
	defer runExt2(context.Background(), "docker", "rm", "-f", id)
	dir := "/tmp/pi-sandbox-bin.pibench"
	if out, err := exec.CommandContext(ctx, "docker", "exec", id, "mkdir", "-p", dir).CombinedOutput(); err != nil {
		return "", 0, fmt.Sprintf("mkdir: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "docker", "cp", exe, id+":"+dir+"/"+name).CombinedOutput(); err != nil {
		return "", 0, fmt.Sprintf("docker cp: %v: %s", err, out)
	}
	plant := "cd " + dir + " && echo " + mode + " > " + hostileModeFile + " && chown 0:0 . " + name + " && chmod 755 . && chmod 711 " + name + " && ./" + name + " __shim version"
	if out, err := exec.CommandContext(ctx, "docker", "exec", id, "sh", "-c", plant).CombinedOutput(); err != nil {
		return "", 0, fmt.Sprintf("plant: %v: %s", err, out)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// Under GNU time where it is: a child's ru_maxrss counts this big
	// process it was forked from, not only the CLI.
	argv, peakKiB, done := underTime([]string{o.bin, "tool", "--backend", "docker", "--container", id, "bash", `{"command":"echo hi"}`})
	defer done()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	stdout, stderr := &tailBuffer{max: 4 << 10}, &tailBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	cmd.Run()
	d = time.Since(start)
	if cmd.ProcessState == nil {
		return "", d, "the CLI did not run"
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss >> 10
	}
	if kib := peakKiB(); kib >= 0 {
		rss = kib >> 10
	}
	seen, _ := runExt2(ctx, "docker", "exec", id, "cat", hostileLog)
	seen = strings.ReplaceAll(strings.TrimSpace(seen), "\n", ", ")
	code := cmd.ProcessState.ExitCode()
	outcome := "recovered (" + firstLine(resultOf(stdout.String())) + ")"
	if code != 0 {
		outcome = "failed: " + firstLine(stderr.String()+"\n"+stdout.String())
	}
	note = fmt.Sprintf("exit %d in %.1f s, peak RSS %d MiB, %s; the planted helper: %s", code, d.Seconds(), rss, outcome, seen)
	switch {
	case cctx.Err() != nil:
		fail = "no answer within 1 minute"
	case !strings.Contains(seen, "request "+proto.PathHello):
		fail = "the planted helper was not asked for its hello (it did not serve)"
	case code == 0 && resultOf(stdout.String()) != "hi\n":
		fail = "the call answered " + firstLine(stdout.String())
	case code != 0 && !strings.Contains(stderr.String()+stdout.String(), want):
		fail = fmt.Sprintf("the error does not say %q", want)
	case rss >= 64:
		fail = fmt.Sprintf("peak RSS %d MiB", rss)
	case d > 15*time.Second:
		fail = fmt.Sprintf("failed after %.1f s", d.Seconds())
	}
	return note, d, fail
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
