package shim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// BinaryName is the file name of the slim in-target binary
// (cmd/pi-sandbox-shim), which the CLI looks for next to itself.
const BinaryName = "pi-sandbox-shim"

// BinaryEnv names the environment variable that points at the helper
// binary, ahead of every other place.
const BinaryEnv = "PI_SANDBOX_SHIM_BIN"

// InstallHint says how to get both binaries, static, side by side.
const InstallHint = "CGO_ENABLED=0 go install github.com/pi-sandbox/pi-sandbox/cmd/pi-sandbox@latest github.com/pi-sandbox/pi-sandbox/cmd/pi-sandbox-shim@latest (or make build in a checkout)"

// BinaryError is the refusal of a session that needs the helper binary on
// this machine and found none it could use: every place looked at, and why
// each could not serve.
type BinaryError struct {
	// Static is set when the binary is to be uploaded into a target, which
	// needs a statically linked one.
	Static bool
	// Arch, when set, is the GOARCH of the Linux target the binary is for.
	Arch string
	// Tried lists "PLACE: why not", in the order looked at.
	Tried []string
}

// Is makes a BinaryError an [ops.ErrConfig]: the machine lacks a file the
// session needs, which no retry fixes (the CLI exits 2).
func (e *BinaryError) Is(target error) bool { return target == ops.ErrConfig }

func (e *BinaryError) Error() string {
	kind := "helper binary"
	if e.Static {
		kind = "static helper binary"
	}
	if e.Arch != "" {
		return fmt.Sprintf("shim: no %s %s for linux/%s on this machine (%s); make build puts %s and %s next to the CLI "+
			"(or: CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -o %s ./cmd/pi-sandbox-shim)",
			kind, BinaryName, e.Arch, strings.Join(e.Tried, "; "), ArchBinaryName("amd64"), ArchBinaryName("arm64"), e.Arch, ArchBinaryName(e.Arch))
	}
	return fmt.Sprintf("shim: no %s %s on this machine (%s); install both binaries: %s, or set %s to one; "+
		"--no-helper (Go: NoHelper) runs without it, and then a process that calls setsid itself survives a kill",
		kind, BinaryName, strings.Join(e.Tried, "; "), InstallHint, BinaryEnv)
}

// LimitReason is the short reason Info.Limits give when NoHelper runs
// without a binary: err itself unless it is a *BinaryError.
func LimitReason(err error) string {
	if be := (*BinaryError)(nil); errors.As(err, &be) {
		if be.Arch != "" {
			return "no " + BinaryName + " for linux/" + be.Arch + " on this machine"
		}
		return "no " + BinaryName + " on this machine"
	}
	return err.Error()
}

// HostBinary returns the path of a static binary to upload into targets
// and run there as the helper. It looks at $PI_SANDBOX_SHIM_BIN (when set,
// the only place), then pi-sandbox-shim next to this executable, then this
// executable when it is statically linked and serves the shim (Dispatch).
// Finding none is a *BinaryError that lists each place and why: a
// dynamically linked build (go build with cgo, the default) cannot run in
// a container or on another host.
func HostBinary() (string, error) {
	return lookup(lookupEnv(), true)
}

// HostBinaryAt is HostBinary for path when it is not empty (a backend's
// ShimBinary setting): path must be a static ELF executable.
func HostBinaryAt(path string) (string, error) {
	if path == "" {
		return HostBinary()
	}
	if why := usable(path, true); why != "" {
		return "", &BinaryError{Static: true, Tried: []string{path + " (ShimBinary): " + why}}
	}
	return path, nil
}

// LocalBinary returns a binary that runs the shim on this machine:
// $PI_SANDBOX_SHIM_BIN, else pi-sandbox-shim next to this executable, else
// this executable when it serves the shim (Dispatch was called). A
// dynamically linked one does here. Finding none is a *BinaryError.
func LocalBinary() (string, error) {
	return lookup(lookupEnv(), false)
}

// lookupIn is what lookup reads from the process.
type lookupIn struct {
	env        string // $PI_SANDBOX_SHIM_BIN
	exe        string // os.Executable()
	exeErr     error
	dispatches bool // Available()
}

func lookupEnv() lookupIn {
	exe, err := os.Executable()
	return lookupIn{env: os.Getenv(BinaryEnv), exe: exe, exeErr: err, dispatches: Available()}
}

// lookup finds the binary in the places in says; static requires a
// statically linked one.
func lookup(in lookupIn, static bool) (string, error) {
	e := &BinaryError{Static: static}
	if in.env != "" {
		if why := usable(in.env, static); why != "" {
			e.Tried = append(e.Tried, "$"+BinaryEnv+"="+in.env+": "+why)
			return "", e
		}
		return in.env, nil
	}
	e.Tried = append(e.Tried, "$"+BinaryEnv+": not set")
	if in.exeErr != nil {
		e.Tried = append(e.Tried, "this executable: "+in.exeErr.Error())
		return "", e
	}
	sib := filepath.Join(filepath.Dir(in.exe), BinaryName)
	why := usable(sib, static)
	if why == "" {
		return sib, nil
	}
	e.Tried = append(e.Tried, sib+": "+why)
	if why = usable(in.exe, static); why == "" && !in.dispatches {
		why = "does not serve the helper (a Go program does when its main calls shim.Dispatch first)"
	}
	if why == "" {
		return in.exe, nil
	}
	e.Tried = append(e.Tried, in.exe+" (this executable): "+why)
	return "", e
}

// usable says why the file at p cannot serve as the helper binary, "" when
// it can: a regular executable file, and with static a statically linked
// ELF executable.
func usable(p string, static bool) string {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case err != nil:
		return err.Error()
	case !fi.Mode().IsRegular():
		return "not a regular file"
	case fi.Mode()&0o111 == 0:
		return "not executable"
	}
	if !static {
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if err := checkStatic(f); err != nil {
		return err.Error()
	}
	return ""
}
