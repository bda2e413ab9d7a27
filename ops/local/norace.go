//go:build !race

package local

const shimEnvExtra = ""
