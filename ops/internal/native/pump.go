package native

import (
	"io"
	"os"
	"sync/atomic"
	"time"
)

// pump copies the command's output pipe to the sink as bytes arrive.
type pump struct {
	r        *os.File
	out      io.Writer
	activity chan struct{} // a ping per chunk (coalesced)
	done     chan struct{} // closed at end of input (or when r is closed)
	failed   chan struct{} // closed when the sink failed; err is set
	err      error
	busy     atomic.Bool // a Write to the sink is in progress
}

func startPump(r *os.File, out io.Writer) *pump {
	p := &pump{r: r, out: out, activity: make(chan struct{}, 1), done: make(chan struct{}), failed: make(chan struct{})}
	go p.run()
	return p
}

func (p *pump) run() {
	defer close(p.done)
	buf := make([]byte, pumpBuf)
	for {
		n, rerr := p.r.Read(buf)
		if n > 0 && p.err == nil {
			p.busy.Store(true)
			_, werr := p.out.Write(buf[:n])
			p.busy.Store(false)
			if werr != nil {
				// Nobody takes the output any more: the caller stops the
				// command; the rest is read and dropped.
				p.err = werr
				close(p.failed)
			}
			select {
			case p.activity <- struct{}{}:
			default:
			}
		}
		if rerr != nil {
			return
		}
	}
}

// idle reports whether an idle timer may expire now: a slow sink is not an
// idle command.
func (p *pump) idle() bool { return !p.busy.Load() && !p.pending() }

// drain reads until end of input while output keeps arriving with gaps
// shorter than wait, for at most limit; then it closes r (something outside
// the killed tree still holds the pipe) and waits for the copy to stop.
func (p *pump) drain(wait, limit time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	stop := time.NewTimer(limit)
	defer stop.Stop()
	for {
		select {
		case <-p.done:
			p.r.Close()
			return
		case <-p.activity:
			t.Reset(wait)
			continue
		case <-t.C:
			if !p.idle() {
				t.Reset(wait)
				continue
			}
		case <-stop.C:
		}
		p.r.Close()
		<-p.done
		return
	}
}
