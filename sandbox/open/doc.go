// Package open opens the built-in backends by name — local, docker, ssh or k8s,
// as the CLI's flags describe them ([Config.RegisterFlags]) — and makes a
// [sandbox.Sandbox] on them. Package sandbox itself takes any [ops.Backend]
// ([sandbox.OpenBackend]) and imports no backend, so a program that embeds
// only the local backend does not link the Docker and SSH clients.
//
// [Container] uses a running container as it is; [SSHClient] an SSH
// connection the program holds.
package open
