//go:build !race

package native

const shimEnvExtra = ""
