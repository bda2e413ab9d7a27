package images

import (
	"context"
	"slices"
)

// SSHDPackages are pi-sandbox/debian's packages plus the OpenSSH server.
var SSHDPackages = append(slices.Clone(DebianPackages), "openssh-server")

func init() {
	Register(Image{
		Name: "pi-sandbox/sshd",
		Summary: "pi-sandbox/debian + openssh-server, a test host for the ssh backend " +
			"(not the hardened sandbox profile; about a minute)",
		Key: func() ([]byte, error) { return DebianKey("sshd v1", SSHDPackages) },
		Build: func(ctx context.Context, b *Builder, ref string) error {
			// sshd needs its privilege separation directory; the host keys
			// and configuration come from the test that starts it.
			return b.BuildDebian(ctx, ref, SSHDPackages, "mkdir -p \"$1/run/sshd\"\nrm -f \"$1\"/etc/ssh/ssh_host_*\n")
		},
	})
}
