package shim

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
)

// CheckStaticELF reports whether data can serve as the shim on a Linux target
// of goarch: a statically linked ELF executable for that architecture. The
// docker and ssh backends check the host binary before uploading it.
func CheckStaticELF(data []byte, goarch string) error {
	return checkStaticELF(bytes.NewReader(data), goarch)
}

// elfMachines maps a GOARCH to its ELF machine.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM}

func checkStaticELF(r io.ReaderAt, goarch string) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	want := elfMachines[goarch]
	if want == 0 || f.Machine != want {
		return fmt.Errorf("built for %s, the target is %s", f.Machine, goarch)
	}
	return staticProgs(f)
}

// checkStatic reports whether r is a statically linked ELF executable of
// any architecture (which one a target runs is the target's to say).
func checkStatic(r io.ReaderAt) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	return staticProgs(f)
}

func staticProgs(f *elf.File) error {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (build with CGO_ENABLED=0)")
		}
	}
	return nil
}
