// Package pool keeps warm Docker sandboxes: [Pool.Fill] makes idle
// members (hardened containers with the helper daemon started), and
// [Pool.Claim] takes one in milliseconds — a rename on the engine, no exec
// — and returns it as a [sandbox.Sandbox] whose Close removes the
// container. [Pool.Keep] tops the pool up in the background. A pool is the
// same one the CLI's `pi-sandbox pool` and `up --pool` manage: its
// configuration lives in its members' labels.
package pool
