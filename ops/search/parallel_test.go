package search

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func manyFiles(t *testing.T) string {
	rnd := rand.New(rand.NewSource(3))
	files := map[string]string{}
	for i := 0; i < 60; i++ {
		var b strings.Builder
		for l := 0; l < 40; l++ {
			if rnd.Intn(9) == 0 {
				fmt.Fprintf(&b, "hit %d %d\n", i, l)
			} else {
				fmt.Fprintf(&b, "miss %d %d\n", i, l)
			}
		}
		files[fmt.Sprintf("d%d/f%02d.txt", i%4, i)] = b.String()
	}
	return mkTree(t, files)
}

// TestGrepParallelLimitIsOrdered checks that the concurrent search, limited,
// reports exactly the prefix a sequential search would: the unlimited
// output cut by the limit rule.
func TestGrepParallelLimitIsOrdered(t *testing.T) {
	root := manyFiles(t)
	for _, c := range []int{0, 1, 3} {
		full, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "hit", Path: root, Context: c})
		if err != nil {
			t.Fatal(err)
		}
		var evs []ops.GrepEvent
		GrepFS(context.Background(), osFS{}, &ops.GrepQuery{Pattern: "hit", Path: root, Context: c}, func(ev ops.GrepEvent) error {
			evs = append(evs, ev)
			return nil
		})
		for _, limit := range []int{1, 2, 7, 30, 100} {
			lim := &limiter{limit: limit, context: c}
			var want []string
			for i := range evs {
				pass, stop := lim.admit(&evs[i])
				if pass {
					want = append(want, fmtEvent(evs[i]))
				}
				if stop {
					break
				}
			}
			for run := 0; run < 3; run++ {
				got, err := collectGrep(t, engineGrep, ops.GrepQuery{Pattern: "hit", Path: root, Context: c, MaxMatches: limit})
				if err != nil || !equal(got, want) {
					t.Fatalf("context %d limit %d: %d events, want %d (%v)", c, limit, len(got), len(want), err)
				}
			}
		}
		if len(full) < 100 {
			t.Fatalf("only %d events", len(full))
		}
	}
}

func TestGrepParallelStopsCleanly(t *testing.T) {
	root := manyFiles(t)
	before := runtime.NumGoroutine()
	boom := errors.New("boom")
	n := 0
	err := GrepFS(context.Background(), osFS{}, &ops.GrepQuery{Pattern: "hit", Path: root}, func(ops.GrepEvent) error {
		n++
		if n == 5 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 5 {
		t.Fatalf("err %v after %d", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := GrepFS(ctx, osFS{}, &ops.GrepQuery{Pattern: "hit", Path: root}, func(ops.GrepEvent) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// Every worker has exited when GrepFS returns.
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines, %d before", g, before)
	}
}
