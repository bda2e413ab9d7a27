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

// fakeELFFor is a static ELF executable header for machine m.
func fakeELFFor(t *testing.T, m elf.Machine) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(m), Version: uint32(elf.EV_CURRENT), Ehsize: 64, Phentsize: 56}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&buf, binary.LittleEndian, h)
	return buf.Bytes()
}

// TestArchBinary: the binary for a target is chosen by the target's
// architecture — the base binary when it is built for it, else
// pi-sandbox-shim-linux-GOARCH beside it, else beside this executable —
// and a miss names every place, why, and how to build the binary.
func TestArchBinary(t *testing.T) {
	root := t.TempDir()
	cli, other := filepath.Join(root, "bin"), filepath.Join(root, "exe")
	os.Mkdir(cli, 0o755)
	os.Mkdir(other, 0o755)
	write := func(p string, data []byte) string {
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	amd := fakeELFFor(t, elf.EM_X86_64)
	arm := fakeELFFor(t, elf.EM_AARCH64)
	base := write(filepath.Join(cli, BinaryName), amd)

	if p, err := archBinary(base, other, "amd64"); p != base || err != nil {
		t.Errorf("amd64 target: %q, %v; want the base binary", p, err)
	}
	_, err := archBinary(base, other, "arm64")
	var be *BinaryError
	if !errors.As(err, &be) || be.Arch != "arm64" {
		t.Fatalf("arm64 target without an arm64 binary: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"for linux/arm64",
		base + ": built for EM_X86_64, the target is arm64",
		filepath.Join(cli, "pi-sandbox-shim-linux-arm64") + ": no such file",
		filepath.Join(other, "pi-sandbox-shim-linux-arm64") + ": no such file",
		"make build puts pi-sandbox-shim-linux-amd64 and pi-sandbox-shim-linux-arm64 next to the CLI",
		"GOARCH=arm64",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if got := LimitReason(err); got != "no pi-sandbox-shim for linux/arm64 on this machine" {
		t.Errorf("LimitReason = %q", got)
	}

	// Beside this executable, then beside the base binary (first).
	exeArm := write(filepath.Join(other, ArchBinaryName("arm64")), arm)
	if p, err := archBinary(base, other, "arm64"); p != exeArm || err != nil {
		t.Errorf("arm64 beside the executable: %q, %v", p, err)
	}
	cliArm := write(filepath.Join(cli, ArchBinaryName("arm64")), arm)
	if p, err := archBinary(base, other, "arm64"); p != cliArm || err != nil {
		t.Errorf("arm64 beside the base: %q, %v", p, err)
	}
	// A file of the right name for the wrong machine is passed over, as
	// is one dynamically linked.
	write(cliArm, amd)
	if p, err := archBinary(base, other, "arm64"); p != exeArm || err != nil {
		t.Errorf("a mislabelled arm64 binary: %q, %v", p, err)
	}
	write(exeArm, fakeELF(t, true))
	_, err = archBinary(base, other, "arm64")
	if err == nil || !strings.Contains(err.Error(), cliArm+": built for EM_X86_64") || !strings.Contains(err.Error(), exeArm+": dynamically linked") {
		t.Errorf("no usable arm64 binary: %v", err)
	}

	// An arm64 host's base binary serves arm64 targets and finds the
	// amd64 one beside it.
	armBase := write(filepath.Join(other, BinaryName), arm)
	cliAmd := write(filepath.Join(other, ArchBinaryName("amd64")), amd)
	if p, err := archBinary(armBase, "", "arm64"); p != armBase || err != nil {
		t.Errorf("arm64 base for arm64: %q, %v", p, err)
	}
	if p, err := archBinary(armBase, "", "amd64"); p != cliAmd || err != nil {
		t.Errorf("arm64 base for amd64: %q, %v", p, err)
	}
}

// TestBinariesFor: For hashes the binary it chooses once, per
// architecture.
func TestBinariesFor(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, BinaryName)
	os.WriteFile(base, fakeELFFor(t, elf.EM_X86_64), 0o755)
	os.WriteFile(filepath.Join(dir, ArchBinaryName("arm64")), fakeELFFor(t, elf.EM_AARCH64), 0o755)
	b, err := FindBinaries(base)
	if err != nil {
		t.Fatal(err)
	}
	amd, err := b.For("amd64")
	if err != nil || amd.Path != base {
		t.Fatalf("For(amd64) = %+v, %v", amd, err)
	}
	arm, err := b.For("arm64")
	if err != nil || arm.Path != filepath.Join(dir, ArchBinaryName("arm64")) || arm.Sum == amd.Sum {
		t.Fatalf("For(arm64) = %+v, %v", arm, err)
	}
	if again, _ := b.For("arm64"); again != arm {
		t.Errorf("For(arm64) again = %p, want the first %p", again, arm)
	}
}
