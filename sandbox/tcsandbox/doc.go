// Package tcsandbox is a testcontainers-go module for pi-sandbox: Run starts
// a container with pi-sandbox's hardened profile (the one `--image` uses:
// user 1000:1000, all capabilities dropped, no-new-privileges, an init,
// resource limits, no network, a read-only root, the workspace on a
// volume), and (*Container).Sandbox opens a sandbox on it whose tools work
// in the writable /workspace.
//
//	ctr, err := tcsandbox.Run(ctx, "pi-sandbox/busybox",
//		tcsandbox.WithRuntime("runsc"),       // gVisor, once `make runtimes` registered it
//		tcsandbox.WithWorkspace("testdata/project"), // copied into /workspace
//		tcsandbox.WithPolicy(policy))
//	testcontainers.CleanupContainer(t, ctr)
//	sb, err := ctr.Sandbox(ctx)
//	res, err := sb.Call(ctx, "bash", map[string]any{"command": "go test ./..."})
//
// As in testcontainers-go's modules, the options are
// testcontainers.ContainerCustomizer values: this package's (WithRuntime,
// WithWorkspace, WithPolicy and the named relaxations) and testcontainers'
// own (WithLabels, WithEnv, WithMounts ...). A ConfigModifier or
// HostConfigModifier given with testcontainers' options runs after the
// profile's, so it can relax anything. Images are local: testcontainers
// pulls only an image the engine lacks, and pi-sandbox's images are built
// with `pi-sandbox image build`.
//
// The container is labelled as pi-sandbox's ephemeral containers are
// (pi-sandbox.managed, pi-sandbox.kind=ephemeral, this host and process),
// so with Ryuk disabled (TESTCONTAINERS_RYUK_DISABLED=true) `pi-sandbox gc`
// removes one whose test process died before terminating it.
package tcsandbox
