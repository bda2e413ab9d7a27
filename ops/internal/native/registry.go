//go:build unix

package native

// Registry owns background processes for several backends: the in-target
// helper's daemon mode (`__shim serve --listen`) gives one to every client
// session, so what one CLI call leaves running is listed, limited and kept
// by the daemon, not by the session that started it.
type Registry struct{ g *background }

// NewRegistry returns a registry of at most max background process groups
// (zero: DefaultMaxBackground).
func NewRegistry(max int) (*Registry, error) {
	g, err := newBackground(max)
	if err != nil {
		return nil, err
	}
	return &Registry{g: g}, nil
}

// SetMax changes the limit (max <= 0: DefaultMaxBackground): each client
// of the daemon brings its own, the latest applies. Groups over a lowered
// limit keep running; new ones are refused until they end.
func (r *Registry) SetMax(max int) {
	if max <= 0 {
		max = DefaultMaxBackground
	}
	r.g.mu.Lock()
	r.g.max = max
	r.g.mu.Unlock()
}

// Len returns how many background process groups the registry owns.
func (r *Registry) Len() int {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	return len(r.g.procs)
}

// Close kills every group (a kill request to each shim, then SIGKILL) and
// waits for them, at most about two seconds.
func (r *Registry) Close() { r.g.close() }
