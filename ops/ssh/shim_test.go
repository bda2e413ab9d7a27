package sshops_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
	"github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"
)

// TestReplacedShimNotRun: a command replaces the cached helper binary with
// a wrapper script that logs its invocations and then runs the original.
// Neither the rest of that session nor the next session runs the wrapper,
// and the next session still has its helper (the binary is uploaded again).
func TestReplacedShimNotRun(t *testing.T) {
	s := sshtest.Start(t)
	s.NeedDedicated(t)
	bin := os.Getenv("PI_SANDBOX_SHIM_BIN")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatalf("the shim binary (PI_SANDBOX_SHIM_BIN=%q): %v", bin, err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	cfg := s.Config()
	cfg.WorkDir = s.TempDir(t)
	ctx := context.Background()

	first, err := sshops.New(ctx, cfg) // uploads the shim
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if !first.Info().Has("helper") {
		t.Fatalf("no helper: %v", first.Info().Limits)
	}
	home := first.Info().Home
	cached := path.Join(home, ".cache/pi-sandbox/shim-"+want[:16])
	logFile := path.Join(home, "wrapper.log")
	// Copy, remove, write: the helper's own binary is gone from its path
	// (a write in place would fail: the file is being executed).
	replace := `f=` + cached + ` && cp "$f" "$f.orig" && rm "$f" && printf '#!/bin/sh\necho "$*" >> ` + logFile + `\nexec "$0.orig" "$@"\n' > "$f" && chmod 755 "$f" && "$f" __shim version && rm ` + logFile
	var out syncBuf
	if err := first.Run(ctx, &ops.Cmd{Command: replace, Output: &out}); err != nil || !strings.HasPrefix(out.String(), "pi-sandbox-shim ") {
		t.Fatalf("replacing the shim: %q %v", out.String(), err)
	}
	// Commands at once: each needs a shim process of its own.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- first.Run(ctx, &ops.Cmd{Command: "sleep 0.3"})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if log, err := ops.ReadFile(ctx, first, logFile); err == nil {
		t.Errorf("later commands of the session ran the wrapper:\n%s", log)
	}
	first.Close()

	b, err := sshops.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Info().Has("helper") {
		t.Fatalf("no helper after the shim was replaced: %v", b.Info().Limits)
	}
	out = syncBuf{}
	if err := b.Run(ctx, &ops.Cmd{Command: "echo ok", Output: &out}); err != nil || out.String() != "ok\n" {
		t.Fatalf("Run = %q, %v", out.String(), err)
	}
	if log, err := ops.ReadFile(ctx, b, logFile); err == nil {
		t.Errorf("the next session ran the wrapper:\n%s", log)
	}
	got, err := ops.ReadFile(ctx, b, cached)
	if err != nil {
		t.Fatal(err)
	}
	if s := sha256.Sum256(got); hex.EncodeToString(s[:]) != want {
		t.Errorf("%s is not the shim again (%d bytes)", cached, len(got))
	}
}

// TestReplacedShimNotRunNoHelper: without the helper each command runs
// under the cached shim; once a command has replaced it, the next command
// is refused without running it, and the next session uploads it again.
func TestReplacedShimNotRunNoHelper(t *testing.T) {
	s := sshtest.Start(t)
	s.NeedDedicated(t)
	bin := os.Getenv("PI_SANDBOX_SHIM_BIN")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatalf("the shim binary (PI_SANDBOX_SHIM_BIN=%q): %v", bin, err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	cfg := s.Config()
	cfg.WorkDir = s.TempDir(t)
	cfg.NoHelper = true
	ctx := context.Background()

	b, err := sshops.New(ctx, cfg) // uploads the shim
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Info().Has("shim") {
		t.Fatalf("no shim: %v", b.Info().Limits)
	}
	home := b.Info().Home
	cached := path.Join(home, ".cache/pi-sandbox/shim-"+want[:16])
	logFile := path.Join(home, "wrapper.log")
	replace := `f=` + cached + ` && mv "$f" "$f.orig" && printf '#!/bin/sh\necho "$*" >> ` + logFile + `\nexec "$0.orig" "$@"\n' > "$f" && chmod 755 "$f"`
	if err := b.Run(ctx, &ops.Cmd{Command: replace}); err != nil {
		t.Fatalf("replacing the shim: %v", err)
	}
	err = b.Run(ctx, &ops.Cmd{Command: "true"})
	var se *ops.StartError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "not the one uploaded") {
		t.Errorf("a command after the replacement = %v, want a start error naming the changed binary", err)
	}
	b.Close()

	b2, err := sshops.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	var out syncBuf
	if err := b2.Run(ctx, &ops.Cmd{Command: "echo ok", Output: &out}); err != nil || out.String() != "ok\n" {
		t.Fatalf("Run = %q, %v (limits %v)", out.String(), err, b2.Info().Limits)
	}
	if !b2.Info().Has("shim") {
		t.Fatalf("no shim after the replacement: %v", b2.Info().Limits)
	}
	if log, err := ops.ReadFile(ctx, b2, logFile); err == nil {
		t.Errorf("the wrapper ran:\n%s", log)
	}
}
