//go:build !linux

package sandbox

import (
	"errors"
	"net"
)

const canSplice = false

func spliceN(dst *net.UnixConn, src *net.TCPConn, n int64) (int64, error) {
	return 0, errors.New("no splice here")
}
