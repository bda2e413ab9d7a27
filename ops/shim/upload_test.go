package shim_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// TestUploadStreamsAndChecks: an Upload hashes the file once per version
// (a rebuilt file is hashed again), streams the same content, and a file
// changed after hashing fails its read and its Close.
func TestUploadStreamsAndChecks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bin")
	data := []byte(strings.Repeat("shim content ", 50000))
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	u, err := shim.ReadUpload(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if u.Sum != hex.EncodeToString(sum[:]) || u.Size != int64(len(data)) {
		t.Fatalf("Upload = %+v, want sum %x size %d", u, sum, len(data))
	}
	if again, _ := shim.ReadUpload(p); again != u {
		t.Error("the same version was hashed again")
	}
	r, err := u.Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || string(got) != string(data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}

	// Rebuilt: same size, other content and mtime.
	changed := []byte(strings.Repeat("SHIM content ", 50000))
	if err := os.WriteFile(p, changed, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	r, err = u.Open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "changed since it was hashed") {
		t.Errorf("read of a changed file = %v, want the change reported", err)
	}
	if err := r.Close(); err == nil {
		t.Error("Close of a changed file = nil")
	}
	nu, err := shim.ReadUpload(p)
	if err != nil {
		t.Fatal(err)
	}
	if nu == u || nu.Sum == u.Sum {
		t.Errorf("the rebuilt file kept the old hash %s", nu.Sum)
	}
}
