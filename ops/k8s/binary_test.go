package k8s

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// TestNewRefusesUnusableHelperBinary: without a usable helper binary on
// this machine New fails before a pod is created, with the error that
// names the binary; NoHelper waives it.
func TestNewRefusesUnusableHelperBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pi-sandbox-shim")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{Image: "busybox", Kubeconfig: filepath.Join(t.TempDir(), "none"), ShimBinary: p})
	var be *shim.BinaryError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "k8s: shim: no static helper binary pi-sandbox-shim") {
		t.Fatalf("New = %v, want the *shim.BinaryError", err)
	}
	sf, err := readShim(&Config{ShimBinary: p, NoHelper: true})
	if err != nil || sf.err == nil || sf.err.Error() != "no pi-sandbox-shim on this machine" {
		t.Fatalf("readShim with NoHelper = %+v, %v", sf, err)
	}
}

// TestShimForNodeArch: the binary uploaded into a pod is the one for its
// node's architecture (pi-sandbox-shim-linux-GOARCH beside the base); a
// node without one leaves the short reason for Info.Limits and the full
// error for the refusal of a pod we created.
func TestShimForNodeArch(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, shim.BinaryName)
	os.WriteFile(base, staticELFHeader(elf.EM_X86_64), 0o755)
	arm := filepath.Join(dir, shim.ArchBinaryName("arm64"))
	os.WriteFile(arm, staticELFHeader(elf.EM_AARCH64), 0o755)
	sf, err := readShim(&Config{ShimBinary: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.choose("arm64"); err != nil || sf.host != arm || sf.sum == "" || !strings.HasPrefix(sf.name, "pi-sandbox-shim-") {
		t.Fatalf("arm64 node: %+v, %v", sf, err)
	}
	armName := sf.name
	if err := sf.choose("amd64"); err != nil || sf.host != base || sf.name == armName {
		t.Fatalf("amd64 node: %+v, %v", sf, err)
	}
	err = sf.choose("riscv64")
	if err == nil || sf.up != nil || sf.err.Error() != "no pi-sandbox-shim for linux/riscv64 on this machine" || sf.full == nil || !strings.Contains(sf.full.Error(), "GOARCH=riscv64") {
		t.Fatalf("riscv64 node: %v, %+v", err, sf)
	}
}

// staticELFHeader is a static ELF executable header for machine m (all
// the binary lookup reads).
func staticELFHeader(m elf.Machine) []byte {
	var buf bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(m), Version: uint32(elf.EV_CURRENT), Ehsize: 64, Phentsize: 56}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&buf, binary.LittleEndian, h)
	return buf.Bytes()
}
