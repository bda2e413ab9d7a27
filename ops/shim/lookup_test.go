package shim

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeELF is a minimal ELF64 executable header, with a PT_INTERP program
// header when dynamic (what the dynamic linker's name makes of a cgo build).
func fakeELF(t *testing.T, dynamic bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Ehsize: 64, Phentsize: 56,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	if dynamic {
		h.Phoff, h.Phnum = 64, 1
	}
	binary.Write(&buf, binary.LittleEndian, h)
	if dynamic {
		binary.Write(&buf, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_INTERP), Off: 120, Filesz: 28, Memsz: 28})
		buf.WriteString("/lib64/ld-linux-x86-64.so.2\x00")
	}
	return buf.Bytes()
}

// TestLookup: the places are looked at in order ($PI_SANDBOX_SHIM_BIN
// alone when set, the sibling, the executable), a binary to upload must be
// static, and a refusal names the binary, every place and why, and the
// install line.
func TestLookup(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	static := write("static", fakeELF(t, false), 0o755)
	dynamic := write("dynamic", fakeELF(t, true), 0o755)
	script := write("script", []byte("#!/bin/sh\n"), 0o755)
	plain := write("plain", fakeELF(t, false), 0o644)
	// Executables with a sibling pi-sandbox-shim of each kind.
	withSib := func(name string, data []byte, mode os.FileMode) string {
		d := filepath.Join(dir, name)
		os.Mkdir(d, 0o755)
		if data != nil {
			if err := os.WriteFile(filepath.Join(d, BinaryName), data, mode); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(d, "pi-sandbox")
	}
	none := withSib("none", nil, 0)
	staticSib := withSib("static-sib", fakeELF(t, false), 0o755)
	dynSib := withSib("dyn-sib", fakeELF(t, true), 0o755)
	// The executables themselves: copy static/dynamic to where withSib
	// said, so the sibling is next to them.
	exe := func(at, from string) string {
		data, _ := os.ReadFile(from)
		if err := os.WriteFile(at, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return at
	}
	dynExe := exe(none, dynamic)
	staticExeNone := exe(filepath.Join(dir, "none", "static-pi"), static)
	exe(staticSib, dynamic)
	exe(dynSib, dynamic)

	for _, tc := range []struct {
		name   string
		in     lookupIn
		static bool
		want   string   // the path found, "" for a refusal
		says   []string // in the refusal
	}{
		{"env static", lookupIn{env: static, exe: dynExe, dispatches: true}, true, static, nil},
		{"env dynamic is refused, nothing else looked at", lookupIn{env: dynamic, exe: staticExeNone, dispatches: true}, true, "",
			[]string{"$PI_SANDBOX_SHIM_BIN=" + dynamic + ": dynamically linked"}},
		{"env missing", lookupIn{env: filepath.Join(dir, "nope"), exe: dynExe, dispatches: true}, false, "", []string{"nope: no such file"}},
		{"env not executable", lookupIn{env: plain, exe: dynExe}, false, "", []string{"plain: not executable"}},
		{"env a script", lookupIn{env: script, exe: dynExe}, true, "", []string{"script: not an ELF executable"}},
		{"sibling static", lookupIn{exe: staticSib, dispatches: true}, true, filepath.Join(dir, "static-sib", BinaryName), nil},
		{"dynamic executable, no sibling", lookupIn{exe: dynExe, dispatches: true}, true, "", []string{
			"$PI_SANDBOX_SHIM_BIN: not set",
			filepath.Join(dir, "none", BinaryName) + ": no such file",
			dynExe + " (this executable): dynamically linked",
		}},
		{"dynamic sibling, dynamic executable", lookupIn{exe: dynSib, dispatches: true}, true, "", []string{
			filepath.Join(dir, "dyn-sib", BinaryName) + ": dynamically linked",
			dynSib + " (this executable): dynamically linked",
		}},
		{"static executable that dispatches", lookupIn{exe: staticExeNone, dispatches: true}, true, staticExeNone, nil},
		{"static executable that does not dispatch", lookupIn{exe: staticExeNone}, true, "", []string{"static-pi (this executable): does not serve the helper", "shim.Dispatch"}},
		{"executable unknown", lookupIn{exeErr: errors.New("no /proc")}, true, "", []string{"this executable: no /proc"}},
		// On this machine linking does not matter.
		{"local: dynamic executable that dispatches", lookupIn{exe: dynExe, dispatches: true}, false, dynExe, nil},
		{"local: dynamic sibling", lookupIn{exe: dynSib}, false, filepath.Join(dir, "dyn-sib", BinaryName), nil},
		{"local: executable that does not dispatch", lookupIn{exe: dynExe}, false, "", []string{"(this executable): does not serve the helper"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookup(tc.in, tc.static)
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("lookup = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			var be *BinaryError
			if !errors.As(err, &be) || got != "" {
				t.Fatalf("lookup = %q, %v; want a *BinaryError", got, err)
			}
			msg := err.Error()
			says := append([]string{"shim: no ", BinaryName, "CGO_ENABLED=0 go install github.com/pi-sandbox/pi-sandbox/cmd/pi-sandbox@latest github.com/pi-sandbox/pi-sandbox/cmd/pi-sandbox-shim@latest", "make build", "--no-helper"}, tc.says...)
			for _, s := range says {
				if !strings.Contains(msg, s) {
					t.Errorf("error lacks %q:\n%s", s, msg)
				}
			}
			if tc.static != strings.Contains(msg, "static helper binary") {
				t.Errorf("static %v, error %q", tc.static, msg)
			}
		})
	}
}

// TestHostBinaryAt: an explicit path must be a static executable; its
// refusal says which setting named it.
func TestHostBinaryAt(t *testing.T) {
	dir := t.TempDir()
	st, dyn := filepath.Join(dir, "st"), filepath.Join(dir, "dyn")
	os.WriteFile(st, fakeELF(t, false), 0o755)
	os.WriteFile(dyn, fakeELF(t, true), 0o755)
	if p, err := HostBinaryAt(st); p != st || err != nil {
		t.Errorf("HostBinaryAt(static) = %q, %v", p, err)
	}
	_, err := HostBinaryAt(dyn)
	var be *BinaryError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), dyn+" (ShimBinary): dynamically linked") {
		t.Errorf("HostBinaryAt(dynamic) = %v", err)
	}
	if got := LimitReason(err); got != "no pi-sandbox-shim on this machine" {
		t.Errorf("LimitReason = %q", got)
	}
}
