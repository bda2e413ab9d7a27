package open

import (
	"context"

	"github.com/pi-sandbox/pi-sandbox/ops"
	sshops "github.com/pi-sandbox/pi-sandbox/ops/ssh"
)

// openSSH opens the ssh backend from --host [user@]host[:port] (or an alias
// from ~/.ssh/config), --identity and --known-hosts. Host keys are always
// verified.
func openSSH(ctx context.Context, cfg Config) (ops.Backend, error) {
	c, err := sshConfig(cfg)
	if err != nil {
		return nil, err
	}
	return sshops.New(ctx, c)
}

func sshConfig(cfg Config) (sshops.Config, error) {
	user, host, port, err := sshops.SplitTarget(cfg.SSH.Host)
	if err != nil {
		return sshops.Config{}, err
	}
	c := sshops.Config{
		Host:           host,
		Port:           port,
		User:           user,
		KnownHostsFile: cfg.SSH.KnownHosts,
		WorkDir:        cfg.WorkDir,
		MaxBackground:  cfg.MaxBackground,
		NoHelper:       cfg.NoHelper,
	}
	if cfg.SSH.Identity != "" {
		c.IdentityFiles = []string{cfg.SSH.Identity}
	}
	return c, nil
}
