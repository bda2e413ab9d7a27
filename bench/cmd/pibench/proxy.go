package main

import "github.com/pi-sandbox/pi-sandbox/ops/ssh/sshtest"

// tcpProxy is the ssh test harness's loopback proxy, which cuts connections
// on demand: at once (Cut) or after further client-to-server bytes
// (CutAfter), to land a cut in the middle of an upload.
type tcpProxy = sshtest.Proxy

func startProxy(target string) (*tcpProxy, error) { return sshtest.StartProxy(target) }
