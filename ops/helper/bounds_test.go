package helper_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/helper"
	"github.com/pi-sandbox/pi-sandbox/ops/shim/proto"
)

// A hostile helper: what the client reads from it stays bounded in size
// and a session's start in time, whatever it sends.

// heapLimit is how much the heap may grow while a hostile helper talks.
const heapLimit = 64 << 20

// fakeHelper serves h over HTTP/2 on one end of an in-memory stream and
// returns the other end as a Dial.
func fakeHelper(t *testing.T, h http.HandlerFunc) func(context.Context) (io.ReadWriteCloser, error) {
	return func(context.Context) (io.ReadWriteCloser, error) {
		client, server := net.Pipe()
		srv := &http.Server{Handler: h, Protocols: proto.Protocols()}
		ln := &pipeListener{c: server, done: make(chan struct{})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close(); client.Close() })
		return client, nil
	}
}

// rawHelper answers the client's stream with what write sends, with no
// HTTP/2 server in between: frames no server would make.
func rawHelper(t *testing.T, write func(w io.Writer) error) func(context.Context) (io.ReadWriteCloser, error) {
	return func(context.Context) (io.ReadWriteCloser, error) {
		client, server := net.Pipe()
		go io.Copy(io.Discard, server) // the client's preface and requests
		go func() {
			write(server)
			server.Close()
		}()
		t.Cleanup(func() { client.Close(); server.Close() })
		return client, nil
	}
}

// pipeListener hands out one connection.
type pipeListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *pipeListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.UnixAddr{Name: "pipe", Net: "unix"} }

// h2Frame writes one HTTP/2 frame header (the payload follows).
func h2Frame(w io.Writer, length int, kind, flags byte, stream uint32) error {
	var h [9]byte
	h[0], h[1], h[2] = byte(length>>16), byte(length>>8), byte(length)
	h[3], h[4] = kind, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	_, err := w.Write(h[:])
	return err
}

// endless writes filler until w fails.
func endless(w io.Writer, fill byte) {
	chunk := []byte(strings.Repeat(string(fill), 32<<10))
	for {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// okHello answers a hello as a helper would.
func okHello(w http.ResponseWriter) {
	json.NewEncoder(w).Encode(proto.HelloReply{Version: proto.Version, OS: "linux"})
}

// watchHeap runs f and fails when the heap grows by more than heapLimit
// meanwhile, or when f takes longer than d.
func watchHeap(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	var peak uint64
	for {
		select {
		case err := <-errc:
			t.Logf("heap growth peak %d KiB", peak>>10)
			return err
		case <-tick.C:
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base {
				peak = max(peak, ms.HeapAlloc-base)
			}
			if peak > heapLimit {
				t.Fatalf("the heap grew by %d MiB while the helper talked", peak>>20)
			}
		case <-deadline:
			t.Fatalf("no answer within %s (heap growth peak %d KiB)", d, peak>>10)
		}
	}
}

func newFake(t *testing.T, dial func(context.Context) (io.ReadWriteCloser, error), start time.Duration) (*helper.Client, error) {
	return helper.New(t.Context(), helper.Config{Name: "fake", Dial: dial, StartTimeout: start})
}

func wantBound(t *testing.T, err error, text string) {
	t.Helper()
	if err == nil {
		t.Fatal("the session started")
	}
	if !strings.Contains(err.Error(), text) {
		t.Fatalf("error %q does not say %q", err, text)
	}
	if len(err.Error()) > 8<<10 {
		t.Fatalf("error of %d bytes", len(err.Error()))
	}
}

func TestHostileHelloEndlessJSON(t *testing.T) {
	dial := fakeHelper(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"version":1,"build":"`)
		endless(w, 'a')
	})
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := newFake(t, dial, time.Minute)
		return err
	})
	wantBound(t, err, "fake: helper: the helper's hello reply exceeds 1 MiB")
	if !errors.Is(err, ops.ErrTransport) {
		t.Errorf("error %v is no transport failure", err)
	}
}

func TestHostileHelloNoAnswer(t *testing.T) {
	dial := fakeHelper(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	begin := time.Now()
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := newFake(t, dial, 300*time.Millisecond)
		return err
	})
	wantBound(t, err, "fake: helper: no hello from the helper within 300ms")
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("the start failed after %s", d)
	}
}

// TestHostileHelloSlowTrickle: a reply that never ends, a byte at a time,
// meets the start's deadline.
func TestHostileHelloSlowTrickle(t *testing.T) {
	dial := fakeHelper(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"version":1,"build":"`)
		for r.Context().Err() == nil {
			w.Write([]byte{'a'})
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
	})
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := newFake(t, dial, 300*time.Millisecond)
		return err
	})
	wantBound(t, err, "no hello from the helper within 300ms")
}

func TestHostileHelloHugeHeaders(t *testing.T) {
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte('!' + rand.IntN(90)) // little for Huffman to save
	}
	dial := fakeHelper(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", string(big))
		okHello(w)
	})
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := newFake(t, dial, time.Minute)
		return err
	})
	wantBound(t, err, "fake: helper: the helper's reply header block exceeds 64 KiB")
}

// TestHostileHelloEndlessContinuation: a header block that never ends
// (CONTINUATION frames without END_HEADERS).
func TestHostileHelloEndlessContinuation(t *testing.T) {
	dial := rawHelper(t, func(w io.Writer) error {
		h2Frame(w, 0, 0x4, 0, 0) // SETTINGS
		h2Frame(w, 16<<10, 0x1, 0, 1)
		w.Write(make([]byte, 16<<10))
		for {
			if err := h2Frame(w, 16<<10, 0x9, 0, 1); err != nil {
				return err
			}
			if _, err := w.Write(make([]byte, 16<<10)); err != nil {
				return err
			}
		}
	})
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := newFake(t, dial, time.Minute)
		return err
	})
	wantBound(t, err, "fake: helper: the helper's reply header block exceeds 64 KiB")
}

// TestHostileHelloEndlessFrame: an HTTP/2 frame longer than the client
// reads, that never ends.
func TestHostileHelloEndlessFrame(t *testing.T) {
	dial := rawHelper(t, func(w io.Writer) error {
		h2Frame(w, 0, 0x4, 0, 0) // SETTINGS
		h2Frame(w, 1<<24-1, 0x0, 0, 1)
		endless(w, 'a')
		return nil
	})
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := newFake(t, dial, time.Minute)
		return err
	})
	wantBound(t, err, "exceeds 1 MiB")
}

func TestHostileHelloHugeError(t *testing.T) {
	dial := fakeHelper(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(proto.StatusError)
		json.NewEncoder(w).Encode(proto.Error{Kind: "other", Msg: strings.Repeat("x", 900<<10)})
	})
	_, err := newFake(t, dial, time.Minute)
	if err == nil {
		t.Fatal("the session started")
	}
	if n := len(err.Error()); n > proto.MaxErrorText+256 {
		t.Fatalf("error text of %d bytes", n)
	}
}

// hostileAfterHello answers hello, then serves h.
func hostileAfterHello(t *testing.T, h http.HandlerFunc) *helper.Client {
	dial := fakeHelper(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == proto.PathHello {
			okHello(w)
			return
		}
		h(w, r)
	})
	cl, err := newFake(t, dial, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestHostileRunEndlessFrame: a run reply whose frame says it is longer
// than any frame, and never ends.
func TestHostileRunEndlessFrame(t *testing.T) {
	cl := hostileAfterHello(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != proto.PathRun {
			<-r.Context().Done()
			return
		}
		w.Write([]byte{proto.FrameOutput, 0xff, 0xff, 0xff, 0xf0})
		endless(w, 'a')
	})
	err := watchHeap(t, 30*time.Second, func() error {
		return cl.Run(t.Context(), &ops.Cmd{Command: "true"})
	})
	wantBound(t, err, "fake: helper: the helper's run frame (4294967280 bytes) exceeds 1 MiB")
}

// TestHostilePSEndlessJSON: every JSON reply is bounded, not only hello's.
func TestHostilePSEndlessJSON(t *testing.T) {
	cl := hostileAfterHello(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"processes":[`)
		endless(w, ' ')
	})
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := cl.Processes(t.Context())
		return err
	})
	wantBound(t, err, "fake: helper: the helper's ps reply exceeds 1 MiB")
}

func TestHostileStatEndlessJSON(t *testing.T) {
	cl := hostileAfterHello(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"path":"`)
		endless(w, 'a')
	})
	err := watchHeap(t, 30*time.Second, func() error {
		_, err := cl.RealPath(t.Context(), "/x")
		return err
	})
	wantBound(t, err, "fake: helper: the helper's fs reply exceeds 1 MiB")
}

// TestProbeOutputBounded: a probe that prints without end (no marker) is
// refused once it passes MaxProbeOutput; the lines before a marker are
// kept.
func TestProbeOutputBounded(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "os=linux\n")
		endless(pw, 'a')
	}()
	err := watchHeap(t, 30*time.Second, func() error {
		_, _, err := helper.ReadProbe(bufio.NewReader(pr))
		return err
	})
	pr.Close()
	wantBound(t, err, "helper: the probe's output exceeds 64 KiB")

	out, serving, err := helper.ReadProbe(bufio.NewReader(strings.NewReader("a=1\nb=2\n" + helper.ServeMarker + "\nstream")))
	if err != nil || !serving || string(out) != "a=1\nb=2\n" {
		t.Fatalf("ReadProbe = %q, %v, %v", out, serving, err)
	}
	_, serving, err = helper.ReadProbe(bufio.NewReader(strings.NewReader("a=1\n" + helper.ProbeDoneMarker + "\n")))
	if err != nil || serving {
		t.Fatalf("ReadProbe done = %v, %v", serving, err)
	}
	if _, _, err := helper.ReadProbe(bufio.NewReader(strings.NewReader("a=1\n"))); err == nil {
		t.Fatal("an output without its marker was taken")
	}
}

// TestHostileListingEndlessJSON: a listing's larger bound holds too.
func TestHostileListingEndlessJSON(t *testing.T) {
	cl := hostileAfterHello(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"entries":[{"name":"`)
		endless(w, 'a')
	})
	err := watchHeap(t, 60*time.Second, func() error {
		_, _, err := cl.ListDir(t.Context(), "/x")
		return err
	})
	wantBound(t, err, "fake: helper: the helper's fs reply exceeds 8 MiB")
}

// TestListingOfManyEntries: a directory of 30,000 entries (a listing
// reply well over MaxReply) is listed whole through the helper.
func TestListingOfManyEntries(t *testing.T) {
	b := open(t)
	dir := filepath.Join(b.Info().WorkDir, "many")
	os.Mkdir(dir, 0o755)
	for i := range 30000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-with-a-longer-name-%05d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lf := b.(ops.ListFS)
	_, ents, err := lf.ListDir(t.Context(), dir)
	if err != nil || len(ents) != 30000 {
		t.Fatalf("listdir of 30,000 entries: %d entries, %v", len(ents), err)
	}
	des, err := b.ReadDir(t.Context(), dir)
	if err != nil || len(des) != 30000 {
		t.Fatalf("readdir of 30,000 entries: %d entries, %v", len(des), err)
	}
}
