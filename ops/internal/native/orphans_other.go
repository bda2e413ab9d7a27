//go:build !linux

package native

import (
	"errors"
	"os/exec"
)

// AdoptOrphans fails here: there is no child subreaper.
func AdoptOrphans() error { return errors.New("native: no child subreaper on this system") }

func startOwn(cmd *exec.Cmd) error { return cmd.Start() }

func waitOwn(cmd *exec.Cmd) error { return cmd.Wait() }
