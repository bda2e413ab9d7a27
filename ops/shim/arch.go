package shim

import (
	"os"
	"path/filepath"
	"sync"
)

// ArchBinaryName is the file name of the static helper for Linux targets
// of goarch ("pi-sandbox-shim-linux-arm64"), which make build puts next to
// the CLI for amd64 and arm64.
func ArchBinaryName(goarch string) string { return BinaryName + "-linux-" + goarch }

// Binaries are the static helper binaries on this machine, one per target
// architecture. The first is the one HostBinaryAt finds; a target of
// another architecture gets pi-sandbox-shim-linux-GOARCH from the same
// directory, else from this executable's.
type Binaries struct {
	base   string // what HostBinaryAt found
	exeDir string // this executable's directory ("" when unknown)

	mu   sync.Mutex
	arch map[string]*Upload // by GOARCH, once found and hashed
}

// FindBinaries looks for the helper binary as HostBinaryAt(path) does: a
// *BinaryError when there is none. Which one serves a target is For's to
// say once its architecture is known.
func FindBinaries(path string) (*Binaries, error) {
	base, err := HostBinaryAt(path)
	if err != nil {
		return nil, err
	}
	b := &Binaries{base: base, arch: map[string]*Upload{}}
	if exe, err := os.Executable(); err == nil {
		b.exeDir = filepath.Dir(exe)
	}
	return b, nil
}

// Base is the binary FindBinaries found.
func (b *Binaries) Base() string { return b.base }

// For returns the binary for a Linux target of goarch, hashed: the base
// binary when it is built for goarch, else ArchBinaryName(goarch) next to
// it, else next to this executable. Finding none is a *BinaryError listing
// each place and why.
func (b *Binaries) For(goarch string) (*Upload, error) {
	b.mu.Lock()
	u := b.arch[goarch]
	b.mu.Unlock()
	if u != nil {
		return u, nil
	}
	p, err := archBinary(b.base, b.exeDir, goarch)
	if err != nil {
		return nil, err
	}
	if u, err = ReadUpload(p); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.arch[goarch] = u
	b.mu.Unlock()
	return u, nil
}

// archBinary is For's choice: base when it is a static ELF executable for
// goarch, else ArchBinaryName(goarch) in base's directory, then in exeDir.
func archBinary(base, exeDir, goarch string) (string, error) {
	e := &BinaryError{Static: true, Arch: goarch}
	why := archOf(base, goarch)
	if why == "" {
		return base, nil
	}
	e.Tried = append(e.Tried, base+": "+why)
	dirs := []string{filepath.Dir(base)}
	if exeDir != "" && exeDir != dirs[0] {
		dirs = append(dirs, exeDir)
	}
	for _, d := range dirs {
		p := filepath.Join(d, ArchBinaryName(goarch))
		if why := usable(p, true); why != "" {
			e.Tried = append(e.Tried, p+": "+why)
			continue
		}
		if why := archOf(p, goarch); why != "" {
			e.Tried = append(e.Tried, p+": "+why)
			continue
		}
		return p, nil
	}
	return "", e
}

// archOf says why the static binary at p is not one for goarch ("" when
// it is).
func archOf(p, goarch string) string {
	f, err := os.Open(p)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if err := checkStaticELF(f, goarch); err != nil {
		return err.Error()
	}
	return ""
}
