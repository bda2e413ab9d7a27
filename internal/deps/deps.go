//go:build deps

// Package deps pins the third-party modules the project uses, so that
// `go mod tidy` keeps them while packages that import them are being written.
package deps

import (
	_ "github.com/kevinburke/ssh_config"
	_ "github.com/mark3labs/mcp-go/client"
	_ "github.com/moby/moby/api/types/container"
	_ "github.com/moby/moby/client"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/pkg/sftp"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/testcontainers/testcontainers-go"
	_ "golang.org/x/crypto/ssh"
	_ "golang.org/x/crypto/ssh/agent"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "golang.org/x/text/unicode/norm"
)
