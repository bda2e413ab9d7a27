package shim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
)

// Upload is a shim binary read on the host, to be uploaded into a target
// under its content address.
type Upload struct {
	Path string // on the host
	Data []byte
	Sum  string // hex SHA-256 of Data
}

// ReadUpload reads the binary at path (zero: HostBinary) and hashes it.
func ReadUpload(path string) (*Upload, error) {
	if path == "" {
		var err error
		if path, err = HostBinary(); err != nil {
			return nil, err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read shim binary: %w", err)
	}
	sum := sha256.Sum256(data)
	return &Upload{Path: path, Data: data, Sum: hex.EncodeToString(sum[:])}, nil
}

// Name is the binary's content-addressed file name in a target:
// "pi-sandbox-shim-" and the first 16 hex digits of its SHA-256.
func (u *Upload) Name() string { return "pi-sandbox-shim-" + u.Sum[:16] }
