// Package mcpserve serves a sandbox's tools over MCP.
//
// [NewServer] is the MCP server of one loop: the seven tools, each with
// pi's JSON Schema, whose calls go through the loop's pipeline (policy,
// redaction, audit), with bash's output streamed as progress notifications
// when the client sends a progress token. `pi-sandbox serve` runs it on
// stdin/stdout.
//
// [Handler] is an http.Handler serving MCP Streamable HTTP (the transport
// of the MCP SDK, github.com/modelcontextprotocol/go-sdk) where every MCP
// session gets its own sandbox, made by [Options.NewSandbox] when the
// client sends initialize and closed when the session ends: a DELETE, no
// request and no call in progress for [Options.SessionIdle], or
// [Handler.Close]. A session's calls keep running while its client is
// disconnected; their events (progress, then the result) carry SSE ids and
// are kept, up to [Options.ReplayBytes] per session, for a client that
// reconnects with GET and Last-Event-ID, which gets each event it missed
// once. A Last-Event-ID older than what is kept is answered 400 with the
// reason.
//
// With [Options.Tokens], every request needs "Authorization: Bearer TOKEN"
// with one of them (401 without detail otherwise); a session belongs to the
// token that opened it, and its id with another token is 404.
// [Options.MaxSessions] bounds the open sessions (the next initialize is
// 503 with Retry-After), and request bodies over [MaxBodyBytes] are 413.
// [Handler.Health] answers {"ok":true,"sessions":N}, for a health check
// mounted without authentication.
//
// `pi-sandbox serve --http ADDR` is this handler at /mcp (docs/mcp-http.md).
package mcpserve
