package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/pi-sandbox/pi-sandbox/sandbox/mcpserve"
)

func init() {
	register("serve", &command{summary: "serve the tools to another agent over MCP (stdio)", run: runServe})
}

// runServe is `pi-sandbox serve [flags]`: an MCP server on stdin/stdout
// exposing the seven tools, with the same backend and policy flags as the
// other commands. It runs until the client closes stdin or a signal arrives.
func runServe(ctx context.Context, args []string, io stdio) int {
	f := newFlags("serve", "[--http ADDR] [flags]", io)
	f.about = "Serves the seven tools over MCP on stdin/stdout, on the backend the flags choose, until\nthe client closes stdin. Notes go to stderr.\n\nWith --http, serves MCP Streamable HTTP at http://ADDR/mcp (the URL is the first line on\nstdout) until SIGINT/SIGTERM, each MCP session in a sandbox of its own made from the flags\n(with --pool NAME: claimed from that docker pool and removed at its end; docs/mcp-http.md)."
	var hf httpFlags
	hf.register(f.FlagSet)
	f.BoolVar(&f.cfg.AutoCheckpoint, "auto-checkpoint", false, autoCheckpointUsage)
	rest, code, ok := hf.parse(f, args)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return f.usageError("unexpected arguments %q", rest)
	}
	if hf.addr != "" {
		return serveHTTP(ctx, f, &hf, io)
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for _, name := range httpOnly {
		if given[name] {
			return f.usageError("--%s needs --http", name)
		}
	}
	l, closeFn, code := openLoop(ctx, "serve", f.cfg, io)
	if l == nil {
		return code
	}
	defer closeFn()
	t := &stdioTransport{in: readCloser(io.in), out: io.out}
	if err := mcpserve.NewServer(l).Run(ctx, t); err != nil && !cleanEnd(err) {
		fmt.Fprintf(io.err, "pi-sandbox serve: %v\n", err)
		return 1
	}
	return 0
}

// cleanEnd is true for the ways a session normally ends: the client closed
// stdin, or a signal cancelled ctx.
func cleanEnd(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	if r == nil {
		r = strings.NewReader("")
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
