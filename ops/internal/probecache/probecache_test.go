package probecache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestStoreLoadDrop(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	k := Key("docker", "id", "2026-12-07T00:00:00Z", "/workspace")
	if k == Key("docker", "id2026-12-07T00:00:00Z", "", "/workspace") {
		t.Fatal("keys of different parts collide")
	}
	if _, ok := Probes.Load(k); ok {
		t.Fatal("an entry before Store")
	}
	Probes.Store(k, []byte("uid=1000\nstate=/x\n"))
	if b, ok := Probes.Load(k); !ok || string(b) != "uid=1000\nstate=/x\n" {
		t.Fatalf("Load = %q, %v", b, ok)
	}
	d, _ := Probes.path()
	fi, err := os.Stat(filepath.Join(d, k))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("entry mode %v, %v", fi.Mode(), err)
	}
	if di, err := os.Stat(d); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, %v", di.Mode(), err)
	}
	Probes.Drop(k)
	if _, ok := Probes.Load(k); ok {
		t.Fatal("an entry after Drop")
	}
	Probes.Store(k, make([]byte, maxEntry+1))
	if _, ok := Probes.Load(k); ok {
		t.Fatal("an entry over the bound was kept")
	}
}

// TestOpen: a fresh probe is kept with the shim's path; the next open uses
// it; an open that fails on a kept probe drops it and opens again fresh.
func TestOpen(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	runs := 0
	fail := false
	open := func(reuse bool) (*Kept, *Kept, error) {
		k := &Kept{}
		k.Use(reuse, "sandbox")
		out, _ := k.Probe(func() ([]byte, error) { runs++; return []byte("uid=1"), nil }, "arg")
		if fail && k.cached {
			return nil, k, errors.New("wrong kept probe")
		}
		if string(out) == "" {
			t.Fatal("no output")
		}
		return k, k, nil
	}
	shim := func(*Kept) string { return "/s" }
	if _, err := Open(open, shim); err != nil || runs != 1 {
		t.Fatalf("first open: %v, %d probes", err, runs)
	}
	k, err := Open(open, shim)
	if err != nil || runs != 1 || !k.cached || string(k.out) != "uid=1\nshim=/s\n" {
		t.Fatalf("second open: %v, %d probes, kept %q", err, runs, k.out)
	}
	fail = true
	if k, err := Open(open, shim); err != nil || runs != 2 || k.cached {
		t.Fatalf("open with a wrong kept probe: %v, %d probes", err, runs)
	}
}
