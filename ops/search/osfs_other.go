//go:build !unix

package search

import (
	"io"
	"os"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

func openRead(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, mapErr(err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, ops.PathError("read", name, ops.EISDIR)
	}
	return f, nil
}
