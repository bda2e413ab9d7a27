package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

func init() {
	register("port", &command{summary: "forward a host port to a port inside the sandbox", run: runPort})
}

// runPort is `pi-sandbox port [backend flags] [--listen ADDR
// [--listen-public]] PORT`: it listens on the host and forwards each
// connection to 127.0.0.1:PORT inside the target, until interrupted. Its
// only stdout output is the first line, the address it listens on.
func runPort(ctx context.Context, args []string, io stdio) int {
	f := newFlags("port", "[flags] PORT", io)
	f.about = "Forwards connections from a host address to 127.0.0.1:PORT inside the sandbox (a container\n" +
		"needs no network of its own: each connection travels over the helper's stream). Prints the\n" +
		"address it listens on as its only line on stdout, then forwards until interrupted (exit 0).\n" +
		"A port nothing listens on gives the client a closed connection and a line on stderr; the\n" +
		"sandbox gone ends it with exit 1."
	listen := f.String("listen", "127.0.0.1:0", "the host `ADDR` to listen on (port 0: any free port)")
	public := f.Bool("listen-public", false, "allow a --listen address that is not loopback")
	rest, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return f.usageError("takes one PORT")
	}
	port, err := strconv.Atoi(rest[0])
	if err != nil || port < 1 || port > 65535 {
		return f.usageError("PORT %q is not a port number (1-65535)", rest[0])
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return f.usageError("--listen %q: %v", *listen, err)
	}
	if !loopback(host) {
		if !*public {
			return f.usageError("--listen %s is not a loopback address: add --listen-public to allow it", *listen)
		}
		fmt.Fprintf(io.err, "pi-sandbox port: warning: listening on %s: anyone who reaches it reaches port %d in the sandbox\n", *listen, port)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox port: %v\n", err)
		return 1
	}
	sb, err := open.Open(ctx, f.cfg)
	if err != nil {
		ln.Close()
		fmt.Fprintf(io.err, "pi-sandbox port: %v\n", err)
		return openExitCode(err)
	}
	defer sb.Close()
	fmt.Fprintln(io.out, ln.Addr().String())
	if fl, ok := io.out.(interface{ Sync() error }); ok {
		fl.Sync()
	}
	err = sb.Forward(ctx, ln, port, sandbox.ForwardOptions{OnError: func(err error) {
		fmt.Fprintf(io.err, "pi-sandbox port: %v\n", err)
	}})
	if err != nil {
		fmt.Fprintf(io.err, "pi-sandbox port: %v\n", err)
		return 1
	}
	return 0
}

// loopback reports whether host (an IP literal or "localhost") is a
// loopback address; "" (every address) is not.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
