package helper_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// The daemon's host socket (shim.HostDir): a client on the host connects
// without an exec, and trusts only the sandbox's daemon of its build.

// hostDaemon starts `__shim serve --listen` with key and a host socket
// directory, and returns how to reach it (the daemon runs in this
// process's pid namespace).
func hostDaemon(t *testing.T, key string) shim.HostDaemon {
	t.Helper()
	exe := testExe(t)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	base := t.TempDir()
	dir, hdir := filepath.Join(base, "h"), filepath.Join(base, "host")
	for _, d := range []string{dir, hdir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	kr, kw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "__shim", "serve", "--listen", dir, "--ready-fd", "3", "--key-fd", "4")
	cmd.Env = append(shimEnv(), shim.HostDirEnv+"="+hdir)
	cmd.ExtraFiles = []*os.File{rw, kr}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	kr.Close()
	kw.WriteString(key + "\n")
	kw.Close()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	ready, err := io.ReadAll(rr)
	rr.Close()
	if err != nil || strings.TrimSpace(string(ready)) != "ok" {
		t.Fatalf("daemon: %q %v", ready, err)
	}
	ns, err := shim.PidNS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return shim.HostDaemon{Sock: filepath.Join(hdir, shim.HostSocket), Key: key, Build: hex.EncodeToString(sum[:]), PidNS: ns}
}

func TestHostSocketServes(t *testing.T) {
	hd := hostDaemon(t, strings.Repeat("ab", 32))
	c := relayClientDial(t, func(ctx context.Context) (io.ReadWriteCloser, error) {
		return hd.Dial(ctx)
	}, 0)
	out := runOut(t, c, "echo host-socket")
	if out != "host-socket\n" {
		t.Fatalf("output %q", out)
	}
}

func TestHostSocketRefusesForeign(t *testing.T) {
	hd := hostDaemon(t, strings.Repeat("cd", 32))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	wrongKey, otherBuild := hd, hd
	wrongKey.Key, otherBuild.Build = strings.Repeat("ef", 32), strings.Repeat("0", 64)
	for name, h := range map[string]shim.HostDaemon{"wrong key": wrongKey, "other build": otherBuild} {
		if c, err := h.Dial(ctx); !errors.Is(err, shim.ErrHostForeign) {
			if c != nil {
				c.Close()
			}
			t.Errorf("%s: got %v, want ErrHostForeign", name, err)
		}
	}
	// A process that took the socket's name and relays the real daemon's
	// answer (a sandbox process owns the directory): its pid is not the
	// one the proof names.
	mitm := filepath.Join(t.TempDir(), "mitm.sock")
	ln, err := net.Listen("unix", mitm)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 16)
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("unix", hd.Sock)
			if err != nil {
				a.Close()
				return
			}
			go func() { n, _ := io.Copy(b, a); got <- int(n); b.Close() }()
			go func() { io.Copy(a, b); a.Close() }()
		}
	}()
	relayed := hd
	relayed.Sock = mitm
	if c, err := relayed.Dial(ctx); !errors.Is(err, shim.ErrHostForeign) || !strings.Contains(err.Error(), "pid") {
		if c != nil {
			c.Close()
		}
		t.Errorf("relaying listener: got %v, want ErrHostForeign naming the pid", err)
	}
	<-got
	// A socket of another pid namespace (the sandbox user may make the
	// name a link to any socket of the host) is sent nothing.
	otherNS := relayed
	otherNS.PidNS = "pid:[1]"
	if c, err := otherNS.Dial(ctx); !errors.Is(err, shim.ErrHostForeign) || !strings.Contains(err.Error(), "namespace") {
		if c != nil {
			c.Close()
		}
		t.Errorf("peer in another pid namespace: got %v, want ErrHostForeign naming the namespace", err)
	}
	if n := <-got; n != 0 {
		t.Errorf("%d bytes were sent to a peer of another pid namespace", n)
	}
	// No daemon: refused, not foreign (the relay starts one).
	none := hd
	none.Sock = filepath.Join(t.TempDir(), "none.sock")
	if _, err := none.Dial(ctx); err == nil || errors.Is(err, shim.ErrHostForeign) {
		t.Errorf("missing socket: got %v", err)
	}
}

// hostClient is a client of hostDaemon's daemon over its host socket,
// with raw connections (Config.RawDial).
func hostClient(t *testing.T) *helper.Client {
	t.Helper()
	hd := hostDaemon(t, strings.Repeat("12", 32))
	c, err := helper.New(t.Context(), helper.Config{
		Name: "host",
		Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
			return hd.Dial(ctx)
		},
		RawDial: hd.DialRaw,
		Hello:   proto.Hello{WorkDir: proto.Str(t.TempDir()), SpillDir: proto.Str(t.TempDir())},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHostSocketRaw: DialTarget and an egress listener's connections go
// over raw connections of the host socket (the socket itself, which the
// kernel can splice), with half-closes both ways; a port nothing listens
// on is the daemon's refusal, said at once.
func TestHostSocketRaw(t *testing.T) {
	c := hostClient(t)
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			a, err := srv.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(a, a); a.(*net.TCPConn).CloseWrite() }()
		}
	}()
	conn, err := c.DialTarget(t.Context(), srv.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.(interface{ RawConn() *net.UnixConn }); !ok {
		t.Fatalf("DialTarget gave a %T, not a raw connection", conn)
	}
	payload := strings.Repeat("raw bytes ", 100000)
	go func() {
		io.WriteString(conn, payload)
		conn.(interface{ CloseWrite() error }).CloseWrite()
	}()
	got, err := io.ReadAll(conn)
	conn.Close()
	if err != nil || string(got) != payload {
		t.Fatalf("echo over the raw connection: %d bytes, %v; want %d", len(got), err, len(payload))
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	if _, err := c.DialTarget(t.Context(), port); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("dial of a closed port: %v, want connection refused", err)
	}

	ln, err := c.ListenTarget(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		a, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		io.WriteString(a, "from the target")
		a.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, a)
		a.Close()
	}()
	ac, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	if typ := fmt.Sprintf("%T", ac); strings.Contains(typ, "helper.") {
		t.Errorf("the egress listener gave a %s, not a raw connection", typ)
	}
	if b, err := io.ReadAll(ac); err != nil || string(b) != "from the target" {
		t.Fatalf("egress connection: %q, %v", b, err)
	}
}
