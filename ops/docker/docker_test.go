package docker

import (
	"errors"
	"testing"

	"github.com/pi-sandbox/pi-sandbox/ops/shim"
)

// The engine-facing parts are tested in ../../integration against a real
// engine; these cover the parsing that needs none.

func TestParseMount(t *testing.T) {
	m, err := ParseMount("/src:/workspace:ro")
	if err != nil || m != (Mount{Source: "/src", Target: "/workspace", ReadOnly: true}) {
		t.Fatalf("ParseMount = %+v, %v", m, err)
	}
	for _, bad := range []string{"/src", "src:/w", "/s:/w:xx", "/a:/b:ro:x"} {
		if _, err := ParseMount(bad); err == nil {
			t.Errorf("ParseMount(%q) succeeded", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for cfg, want := range map[*Config]error{
		{}:                                    ErrNoTarget,
		{Image: "i", Container: "c"}:          ErrImageAndTarget,
		{Container: "c", Mounts: []Mount{{}}}: ErrMountsNeedImage,
	} {
		if err := cfg.validate(); !errors.Is(err, want) {
			t.Errorf("validate(%+v) = %v, want %v", cfg, err, want)
		}
	}
	if err := (&Config{Image: "i", WorkDir: "rel"}).validate(); err == nil {
		t.Error("relative WorkDir accepted")
	}
	var c Config
	c.Image = "i"
	c.fillImageDefaults()
	if c.User != DefaultUser || c.WorkDir != DefaultWorkDir || c.Memory != DefaultMemory || c.PidsLimit != DefaultPidsLimit || c.CPUs != DefaultCPUs {
		t.Errorf("defaults %+v", c)
	}
	c = Config{Image: "i", Memory: -1, PidsLimit: -1, CPUs: -1}
	c.fillImageDefaults()
	if c.Memory != 0 || c.PidsLimit != 0 || c.CPUs != 0 {
		t.Errorf("negative means none: %+v", c)
	}
}

func TestCheckStaticELF(t *testing.T) {
	if err := shim.CheckStaticELF([]byte("#!/bin/sh\n"), "amd64"); err == nil {
		t.Error("a script passed as the shim")
	}
}

func TestHardenedSpec(t *testing.T) {
	cc, hc, err := HardenedSpec(Config{Image: "img", Runtime: "runsc", CPUs: 8}, KindEphemeral, 2)
	if err != nil {
		t.Fatal(err)
	}
	if hc.Runtime != "runsc" || hc.NetworkMode != "none" || !hc.ReadonlyRootfs || hc.NanoCPUs != 2e9 || hc.Memory != DefaultMemory {
		t.Errorf("HostConfig %+v", hc)
	}
	if cc.User != DefaultUser || cc.WorkingDir != DefaultWorkDir || cc.Labels[LabelKind] != KindEphemeral || cc.Labels[LabelPID] == "" {
		t.Errorf("Config %+v", cc)
	}
	if _, _, err := HardenedSpec(Config{Container: "c"}, KindSandbox, 0); !errors.Is(err, ErrNoTarget) {
		t.Errorf("HardenedSpec without Image = %v", err)
	}
	if err := (&Config{Container: "c", Runtime: "runsc"}).validate(); !errors.Is(err, ErrRuntimeNeedsImage) {
		t.Errorf("Runtime with Container: %v", err)
	}
}
