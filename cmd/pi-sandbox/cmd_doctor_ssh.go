package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

func init() {
	registerDoctorCheck(doctorCheck{order: 40, name: "ssh", run: checkSSHClient})
	registerDoctorCheck(doctorCheck{order: 50, name: "sshd", run: checkSSHD})
}

// checkSSHClient reports what --backend ssh will use by default: the
// known_hosts file (host keys are always verified) and the agent.
func checkSSHClient(ctx context.Context, env *doctorEnv) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", &doctorWarning{"no home directory: pass --known-hosts and --identity"}
	}
	var parts []string
	kh := filepath.Join(home, ".ssh", "known_hosts")
	if _, err := knownhosts.New(kh); err != nil {
		return "", &doctorWarning{fmt.Sprintf("%s unusable (%v): record hosts with ssh-keyscan or pass --known-hosts", kh, err)}
	}
	parts = append(parts, "known_hosts "+kh)
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "unix", sock)
		if err != nil {
			return "", &doctorWarning{fmt.Sprintf("SSH_AUTH_SOCK set but the agent does not answer: %v", err)}
		}
		keys, err := agent.NewClient(c).List()
		c.Close()
		if err != nil {
			return "", &doctorWarning{fmt.Sprintf("agent: %v", err)}
		}
		parts = append(parts, fmt.Sprintf("agent with %d keys", len(keys)))
	} else {
		parts = append(parts, "no agent (keys from --identity or ~/.ssh/id_*)")
	}
	return strings.Join(parts, ", "), nil
}

// checkSSHD reports the OpenSSH server the integration tests start.
func checkSSHD(ctx context.Context, env *doctorEnv) (string, error) {
	p := sshdPath()
	if p == "" {
		return "", &doctorWarning{"sshd not installed (only the ssh tests need it: apt-get install openssh-server)"}
	}
	// sshd has no version flag; the usage text it prints starts with it.
	out, _ := exec.CommandContext(ctx, p, "-V").CombinedOutput()
	v := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	if !strings.HasPrefix(v, "OpenSSH") {
		v = "version unknown"
	}
	return p + " (" + v + ")", nil
}

// sshdPath finds sshd as ops/ssh/sshtest does (that package imports
// "testing", which the binary should not).
func sshdPath() string {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	p, _ := exec.LookPath("sshd")
	return p
}
