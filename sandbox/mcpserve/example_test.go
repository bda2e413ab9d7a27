package mcpserve_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"path/filepath"

	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/mcpserve"
	"github.com/pi-sandbox/pi-sandbox/sandbox/open"
)

// An MCP endpoint at /mcp in a program's own server: each session works in
// a fresh subdirectory of root, removed when the session ends.
func ExampleNew() {
	root, err := os.MkdirTemp("", "sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	h, err := mcpserve.New(mcpserve.Options{
		NewSandbox: func(ctx context.Context, session string) (*sandbox.Sandbox, error) {
			dir := filepath.Join(root, session)
			if err := os.Mkdir(dir, 0o700); err != nil {
				return nil, err
			}
			// open.Config{Docker: open.DockerConfig{Image: "debian"}}
			// would give each session a container instead.
			return open.Open(ctx, open.Config{Backend: "local", WorkDir: dir})
		},
		OnEnd:  func(session string) { os.RemoveAll(filepath.Join(root, session)) },
		Tokens: []string{os.Getenv("MCP_TOKEN")},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("GET /healthz", h.Health)
	_ = &http.Server{Addr: "127.0.0.1:8080", Handler: mux} // ListenAndServe
}
