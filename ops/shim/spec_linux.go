package shim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// A warm shim (`__shim run --spec FD`) is started before its command is
// known, so a backend that runs many commands pays the start of the shim
// off the path of each call: it blocks reading its run from FD, then
// proceeds as `__shim run ARGS...` with the environment the spec gives.
//
// The spec is NUL-terminated strings: the number of ARGS, the ARGS, then
// the environment entries until end of input. End of input before a
// complete spec (the backend closed without a command) ends the shim with
// status 2 and no output. The writer is package ops/internal/native
// (warm.go), which cannot import this package.

// readSpec reads the run from fd, then takes the spec's environment as the
// shim's own (what the command inherits, and the PATH a shell name is
// looked up in).
func readSpec(fdArg string) ([]string, error) {
	fd, err := strconv.Atoi(fdArg)
	if err != nil || fd < 0 {
		return nil, fmt.Errorf("bad --spec %q", fdArg)
	}
	f := os.NewFile(uintptr(fd), "spec")
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	parts := bytes.Split(data, []byte{0})
	if len(parts) < 2 || len(parts[len(parts)-1]) != 0 {
		return nil, errors.New("no run")
	}
	parts = parts[:len(parts)-1]
	n, err := strconv.Atoi(string(parts[0]))
	if err != nil || n < 0 || n > len(parts)-1 {
		return nil, errors.New("bad spec")
	}
	args := make([]string, n)
	for i := range args {
		args[i] = string(parts[1+i])
	}
	os.Clearenv()
	for _, kv := range parts[1+n:] {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok || len(k) == 0 {
			continue
		}
		if err := syscall.Setenv(string(k), string(v)); err != nil {
			return nil, err
		}
	}
	return args, nil
}
