package pool_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
	"github.com/pi-sandbox/pi-sandbox/sandbox"
	"github.com/pi-sandbox/pi-sandbox/sandbox/pool"
)

// A pool of four warm sandboxes, kept topped up while the program runs;
// each claim is a sandbox in milliseconds.
func Example() {
	ctx := context.Background()
	p := &pool.Pool{Name: "agents", Config: docker.Config{Image: "pi-sandbox/debian"}, Size: 4}
	if _, err := p.Fill(ctx); err != nil {
		log.Fatal(err)
	}
	stop := p.Keep(ctx, 2*time.Second)
	defer stop()

	sb, err := p.Claim(ctx, sandbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close() // removes the container
	res, err := sb.Call(ctx, "bash", map[string]any{"command": "uname -s"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Text())
}
