package sandbox

import (
	"context"
	"fmt"

	"github.com/pi-sandbox/pi-sandbox/loop"
	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/tools"
)

// Sandbox is an open backend with its tools.
type Sandbox struct {
	Backend ops.Backend
	Tools   []loop.Tool
}

// Open opens the backend cfg describes and builds the tools on it.
func Open(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var (
		b   ops.Backend
		err error
	)
	switch cfg.Backend {
	case "", "local":
		b, err = openLocal(ctx, cfg)
	case "docker":
		b, err = openDocker(ctx, cfg)
	case "ssh":
		b, err = openSSH(ctx, cfg)
	default:
		return nil, fmt.Errorf("sandbox: unknown backend %q", cfg.Backend)
	}
	if err != nil {
		return nil, err
	}
	if !cfg.Unconfined {
		cb, err := Confine(ctx, b, roots(b.Info(), cfg))
		if err != nil {
			b.Close()
			return nil, err
		}
		b = cb
	}
	return &Sandbox{Backend: b, Tools: tools.All(b)}, nil
}

// roots lists the confinement roots: the working directory, the spill
// directory, and the configured extra roots.
func roots(info ops.Info, cfg Config) []Root {
	rs := []Root{{Path: info.WorkDir}}
	if info.SpillDir != "" {
		rs = append(rs, Root{Path: info.SpillDir})
	}
	for _, p := range cfg.AllowRoots {
		rs = append(rs, Root{Path: p})
	}
	for _, p := range cfg.ReadOnlyRoots {
		rs = append(rs, Root{Path: p, ReadOnly: true})
	}
	return rs
}

// Close closes the backend.
func (s *Sandbox) Close() error { return s.Backend.Close() }
