// Package probecache keeps, on this host, what a backend's probe printed
// about a long-lived sandbox (an up container or pod), so that later
// clients of the same sandbox, started the same way, skip the probe's
// exec. An entry is keyed by everything the probe's output depends on
// (the sandbox's identity and start time, the probe's arguments, the
// helper binary's name); a client that finds an entry wrong drops it and
// probes again. Entries are small files under the user's cache directory
// (0600 in a 0700 directory), never in the target: the probes in Probes,
// and in Sums the SHA-256 of a version of a helper binary
// (shim.ReadUpload: keyed by its path, inode, size, mtime and ctime),
// which a CLI call would otherwise hash again.
package probecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// maxEntry bounds an entry: a probe prints a few hundred bytes.
const maxEntry = 16 << 10

// maxAge is how long an unused entry is kept.
const maxAge = 7 * 24 * time.Hour

// Key is the entry name of the parts (joined unambiguously).
func Key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Dir is one directory of entries under the user's cache directory.
type Dir string

// The directories: kept probes, and helper binaries' sums.
const (
	Probes Dir = "probe"
	Sums   Dir = "sum"
)

func (dn Dir) path() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pi-sandbox", string(dn)), nil
}

// Load returns the entry of key, if there is one.
func (dn Dir) Load(key string) ([]byte, bool) {
	d, err := dn.path()
	if err != nil {
		return nil, false
	}
	p := filepath.Join(d, key)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxEntry {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 {
		return nil, false
	}
	now := time.Now()
	os.Chtimes(p, now, now) // in use: kept by the pruning
	return b, true
}

// Store writes the entry of key (an entry over the bound is not kept).
// Failures are ignored: the cache only saves time.
func (dn Dir) Store(key string, out []byte) {
	if len(out) == 0 || len(out) > maxEntry {
		return
	}
	d, err := dn.path()
	if err != nil || os.MkdirAll(d, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(d, ".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(out)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(d, key)) != nil {
		os.Remove(f.Name())
		return
	}
	prune(d)
}

// Drop removes the entry of key.
func (dn Dir) Drop(key string) {
	if d, err := dn.path(); err == nil {
		os.Remove(filepath.Join(d, key))
	}
}

// prune removes entries unused for maxAge (at most once a day per
// process would do; the directory is small).
func prune(d string) {
	ents, err := os.ReadDir(d)
	if err != nil {
		return
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && (time.Since(fi.ModTime()) > maxAge || strings.HasPrefix(e.Name(), ".tmp-") && time.Since(fi.ModTime()) > time.Hour) {
			os.Remove(filepath.Join(d, e.Name()))
		}
	}
}

// Kept is one backend's use of the cache: the entry of its sandbox (none
// until Use), whether a kept probe may be read, and what the probe printed.
type Kept struct {
	key    string
	reuse  bool
	out    []byte
	cached bool
}

// Use names the entry of the sandbox by parts; reuse says whether a kept
// probe may be read (else a fresh one is kept).
func (k *Kept) Use(reuse bool, parts ...string) {
	k.key, k.reuse = Key(parts...), reuse
}

// Probe returns the kept output of the probe with args (everything else
// its output depends on), or run's, which it remembers for Open to keep.
// Without Use it just runs.
func (k *Kept) Probe(run func() ([]byte, error), args ...string) ([]byte, error) {
	if k.key != "" {
		k.key = Key(append([]string{k.key}, args...)...)
		if k.reuse {
			if out, ok := Probes.Load(k.key); ok {
				k.out, k.cached = out, true
				return out, nil
			}
		}
	}
	out, err := run()
	if err != nil {
		return nil, err
	}
	k.out = out
	return out, nil
}

// Open opens a backend with a kept probe allowed; when that fails with a
// kept probe (open returns the backend's Kept with its error), it drops
// the entry and opens once more without. After an open on a fresh probe
// it keeps that probe with the shim's path (shim returns it, "" when the
// helper did not start: nothing is kept).
func Open[B any](open func(reuse bool) (B, *Kept, error), shim func(B) string) (B, error) {
	b, k, err := open(true)
	if err != nil && k != nil && k.cached {
		Probes.Drop(k.key)
		b, k, err = open(false)
	}
	if err != nil {
		var zero B
		return zero, err
	}
	if k != nil && k.key != "" && !k.cached {
		if p := shim(b); p != "" {
			// The shim as it is now (uploaded after the probe, or again
			// by a restore): a later line wins.
			Probes.Store(k.key, append(bytes.Clone(k.out), "\nshim="+p+"\n"...))
		}
	}
	return b, nil
}
