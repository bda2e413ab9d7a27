package loop

// Usage is pi's token accounting of one assistant message: input tokens
// (not counting cache reads), output tokens, cache reads and writes, and
// their total.
type Usage struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CacheRead   int64 `json:"cacheRead"`
	CacheWrite  int64 `json:"cacheWrite"`
	TotalTokens int64 `json:"totalTokens"`
}

// Add adds u's counts to t (nil u adds nothing).
func (t *Usage) Add(u *Usage) {
	if u == nil {
		return
	}
	t.Input += u.Input
	t.Output += u.Output
	t.CacheRead += u.CacheRead
	t.CacheWrite += u.CacheWrite
	t.TotalTokens += u.TotalTokens
}
