package probecache

import (
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
	if _, ok := Load(k); ok {
		t.Fatal("an entry before Store")
	}
	Store(k, []byte("uid=1000\nstate=/x\n"))
	if b, ok := Load(k); !ok || string(b) != "uid=1000\nstate=/x\n" {
		t.Fatalf("Load = %q, %v", b, ok)
	}
	d, _ := dir()
	fi, err := os.Stat(filepath.Join(d, k))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("entry mode %v, %v", fi.Mode(), err)
	}
	if di, err := os.Stat(d); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, %v", di.Mode(), err)
	}
	Drop(k)
	if _, ok := Load(k); ok {
		t.Fatal("an entry after Drop")
	}
	Store(k, make([]byte, maxEntry+1))
	if _, ok := Load(k); ok {
		t.Fatal("an entry over the bound was kept")
	}
}
