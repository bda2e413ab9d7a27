package main

import (
	"fmt"
	"strings"
)

// httpTargets are the serve --http rows' targets.
func httpTargets(res *results) []targetResult {
	if hs := res.HTTP; hs != nil {
		return rowTargets("serve --http", hs.Err, hs.Rows)
	}
	return nil
}

// httpMarkdown is the report's serve --http section.
func httpMarkdown(res *results) string {
	hs := res.HTTP
	if hs == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("\n## serve --http (docker, `%s`)\n\n", hs.Image)
	if hs.Err != "" {
		w("Error: %s\n\n", cellText(hs.Err))
	}
	w("A new session is the go-sdk Streamable HTTP client's `initialize` through the first `bash true` result (the session ended after the clock), %d samples, each followed by one `docker run --rm --network none IMG true`; with `--pool` the pool is filled back to 2 before each sample (not timed). ", hs.SessionsN)
	w("The per-call row alternates a read of 1 KiB over HTTP and over a stdio `serve` of the same image, %d each.\n\n", hs.CallSample)
	rowTable(w, hs.Rows)
	if hs.Sessions > 0 {
		w("\n%d concurrent sessions on local, 10 `bash true` each: %d calls, %.0f calls/s, p95 %.1f ms; the server's peak RSS %.1f MiB.", hs.Sessions, hs.Calls, hs.CallsPerS, hs.CallP95, hs.ServerRSS)
	}
	if hs.ConcErr != "" {
		w(" Error: %s", cellText(hs.ConcErr))
	}
	w("\n")
	return b.String()
}
