package shim

import (
	"io"
	"net"
)

// InProcess serves a helper session in this process and returns the
// client's end of its stream: the local backend's helper, for which a
// second process on the same machine, as the same user, would add only a
// process switch to every call. Commands run under shimPath (`shimPath
// __shim run`, the subreaper of each command's tree), with env as their
// base environment (nil: this process's). Closing the stream ends the
// session as a lost client does: every command's tree is killed, and the
// call returns once they are (at most a few seconds).
func InProcess(shimPath string, env []string) io.ReadWriteCloser {
	client, server := net.Pipe()
	s := newServer(nil)
	s.shim, s.env = shimPath, env
	sc := newClosingConn(server) // its end: Done once the client closed it
	ended := make(chan struct{})
	go func() {
		serveSession(sc, s)
		close(ended)
	}()
	return &inProcessStream{Conn: client, server: sc, ended: ended}
}

// inProcessStream is the client's end; Close waits for the session's end.
type inProcessStream struct {
	net.Conn
	server *closingConn
	ended  chan struct{}
}

func (c *inProcessStream) Close() error {
	err := c.Conn.Close()
	c.server.Close()
	<-c.ended
	return err
}
