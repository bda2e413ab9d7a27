package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	clientremote "k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/pi-sandbox/pi-sandbox/ops"
)

// podExec is one container of one pod.
type podExec struct {
	c         *Client
	pod       string
	container string
	protocol  string // "", "websocket" or "spdy" (Config.Protocol)
}

// quiet discards client-go's log lines for one call: on a cancel it logs
// "Copying stdout failed ... use of closed network connection" and, up to
// a ping period later, "Websocket Ping failed" through the context's logger.
func quiet(ctx context.Context) context.Context {
	return klog.NewContext(ctx, logr.Discard())
}

// executor returns the remotecommand executor for argv, wired as kubectl
// wires it: WebSocket (v5) first, SPDY offering only v4 when the upgrade
// fails or an HTTPS proxy is in the way.
func (t *podExec) executor(argv []string, stdin bool) (clientremote.Executor, error) {
	req := t.c.api.execRequest(t.pod, &corev1.PodExecOptions{
		Container: t.container, Command: argv,
		Stdin: stdin, Stdout: true, Stderr: true, TTY: false,
	})
	u := req.URL()
	var ws, sp clientremote.Executor
	var err error
	if t.protocol != "spdy" {
		// WebSocket must be GET (RFC 6455 §4.1); it offers only v5.
		if ws, err = clientremote.NewWebSocketExecutor(t.c.REST, "GET", u.String()); err != nil {
			return nil, fmt.Errorf("k8s: websocket executor: %w", err)
		}
		if t.protocol == "websocket" {
			return ws, nil
		}
	}
	rt, up, err := spdy.RoundTripperFor(t.c.REST)
	if err != nil {
		return nil, fmt.Errorf("k8s: spdy transport: %w", err)
	}
	// v1–v3 lose (v1 hangs with stdin) or garble (v2, v3: plain text) the
	// exit status: never offer them.
	if sp, err = clientremote.NewSPDYExecutorForProtocols(rt, up, "POST", u, remotecommand.StreamProtocolV4Name); err != nil {
		return nil, fmt.Errorf("k8s: spdy executor: %w", err)
	}
	if ws == nil {
		return sp, nil
	}
	return clientremote.NewFallbackExecutor(ws, sp, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// exec runs argv in the container and returns its exit status (0–255;
// signal n is 128+n). An error is a transport or API failure, or ctx's
// end: the status is then unknown and the process may still be running.
func (t *podExec) exec(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	ex, err := t.executor(argv, stdin != nil)
	if err != nil {
		return -1, err
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	err = ex.StreamWithContext(quiet(ctx), clientremote.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var ce utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ce):
		return ce.Code, nil
	case ctx.Err() != nil:
		return -1, fmt.Errorf("k8s: exec in pod %s: %w: %w", t.pod, ops.ErrTransport, context.Cause(ctx))
	}
	return -1, fmt.Errorf("k8s: exec in pod %s: %w: %w", t.pod, ops.ErrTransport, err)
}

// result is the outcome of a short exec with its output collected.
type result struct {
	code           int
	stdout, stderr []byte
}

// script runs `sh -c SCRIPT sh ARGS...` and collects its output (bounded).
func (t *podExec) script(ctx context.Context, script string, stdin io.Reader, args ...string) (result, error) {
	var out, errb limitBuffer
	out.max, errb.max = 16<<20, 64<<10
	code, err := t.exec(ctx, append([]string{"/bin/sh", "-c", script, "sh"}, args...), stdin, &out, &errb)
	return result{code: code, stdout: out.b, stderr: errb.b}, err
}

// limitBuffer keeps the first max bytes written to it.
type limitBuffer struct {
	b   []byte
	max int
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	if n := l.max - len(l.b); n > 0 {
		l.b = append(l.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
