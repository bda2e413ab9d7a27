package shim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/pi-sandbox/pi-sandbox/ops/internal/probecache"
)

// Upload is a shim binary on the host, to be uploaded into a target under
// its content address. It is hashed once per process and file version and
// never held in memory: Open streams it from the file.
type Upload struct {
	Path string // on the host
	Size int64
	Sum  string // hex SHA-256 of the content
}

var (
	uploadsMu sync.Mutex
	uploads   = map[uploadKey]*Upload{}
)

// uploadKey is a version of a file: a rebuilt binary is hashed again.
type uploadKey struct {
	path       string
	dev, ino   uint64
	size, mtim int64
	ctim       int64 // any change of the file changes its ctime
}

// ReadUpload hashes the binary at path (zero: HostBinary), or returns the
// Upload of an earlier call for the same version of the file.
func ReadUpload(path string) (*Upload, error) {
	if path == "" {
		var err error
		if path, err = HostBinary(); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read shim binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read shim binary: %w", err)
	}
	key := uploadKey{path: path, size: fi.Size(), mtim: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		key.dev, key.ino, key.ctim = uint64(st.Dev), uint64(st.Ino), st.Ctim.Nano()
	}
	uploadsMu.Lock()
	u := uploads[key]
	uploadsMu.Unlock()
	if u != nil {
		return u, nil
	}
	// The sum of this version of the file is kept on this host: hashing
	// the binary costs a CLI call tens of milliseconds.
	diskKey := ""
	if key.ino != 0 {
		diskKey = probecache.Key("shim-sum", key.path, strconv.FormatUint(key.dev, 10), strconv.FormatUint(key.ino, 10),
			strconv.FormatInt(key.size, 10), strconv.FormatInt(key.mtim, 10), strconv.FormatInt(key.ctim, 10))
		if b, ok := probecache.Sums.Load(diskKey); ok && len(b) == 64 && strings.Trim(string(b), "0123456789abcdef") == "" {
			u = &Upload{Path: path, Size: key.size, Sum: string(b)}
		}
	}
	if u == nil {
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return nil, fmt.Errorf("read shim binary: %w", err)
		}
		u = &Upload{Path: path, Size: n, Sum: hex.EncodeToString(h.Sum(nil))}
		if diskKey != "" && n == key.size {
			probecache.Sums.Store(diskKey, []byte(u.Sum))
		}
	}
	uploadsMu.Lock()
	uploads[key] = u
	uploadsMu.Unlock()
	return u, nil
}

// Name is the binary's content-addressed file name in a target:
// "pi-sandbox-shim-" and the first 16 hex digits of its SHA-256.
func (u *Upload) Name() string { return "pi-sandbox-shim-" + u.Sum[:16] }

// Open streams the binary's content. A file that no longer has the
// content hashed (rebuilt since) fails the read at its end, and Close
// returns that error too (for a caller whose copy drops read errors).
func (u *Upload) Open() (io.ReadCloser, error) {
	f, err := os.Open(u.Path)
	if err != nil {
		return nil, fmt.Errorf("read shim binary: %w", err)
	}
	return &checkedReader{f: f, u: u, h: sha256.New()}, nil
}

// CheckELF is CheckStaticELF on the binary's file.
func (u *Upload) CheckELF(goarch string) error {
	f, err := os.Open(u.Path)
	if err != nil {
		return fmt.Errorf("read shim binary: %w", err)
	}
	defer f.Close()
	return checkStaticELF(f, goarch)
}

// checkedReader reads the file and checks its hash and size at the end.
type checkedReader struct {
	f   *os.File
	u   *Upload
	h   hash.Hash
	n   int64
	err error // the content differs
}

func (r *checkedReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	if err == io.EOF && (r.n != r.u.Size || hex.EncodeToString(r.h.Sum(nil)) != r.u.Sum) {
		r.err = fmt.Errorf("read shim binary: %s changed since it was hashed", r.u.Path)
		return n, r.err
	}
	return n, err
}

func (r *checkedReader) Close() error {
	r.f.Close()
	return r.err
}
