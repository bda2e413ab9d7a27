// Package sandbox turns a configuration (a backend and a policy) into a ready
// set of tools: it opens a backend, wraps it with path confinement, and
// installs policy hooks into the loop. It is also the public Go API for
// programs that embed pi-sandbox.
package sandbox
