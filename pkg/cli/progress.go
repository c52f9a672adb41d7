package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// progressDelay is how long a live read runs before its progress line appears.
const progressDelay = time.Second

// progressLine shows on a terminal's stderr how far a live read has got once it has taken
// longer than progressDelay ("reading the cluster: 12 of 24 reads, 1204 objects"), rewritten in
// place and erased when the read ends. It is never used on a pipe, and never on stdout.
type progressLine struct {
	w     io.Writer
	every time.Duration

	mu    sync.Mutex
	last  source.Progress
	shown bool

	stop chan struct{}
	done chan struct{}
}

// startProgress starts showing the progress of a read on w after delay.
func startProgress(w io.Writer, delay, every time.Duration) *progressLine {
	p := &progressLine{w: w, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop(delay)
	return p
}

// update records how far the read has got; safe from several goroutines.
func (p *progressLine) update(pr source.Progress) {
	p.mu.Lock()
	if pr.Done > p.last.Done {
		p.last = pr
	}
	p.mu.Unlock()
}

func (p *progressLine) loop(delay time.Duration) {
	defer close(p.done)
	wait := time.NewTimer(delay)
	defer wait.Stop()
	select {
	case <-p.stop:
		return
	case <-wait.C:
	}
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		p.draw()
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

func (p *progressLine) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last.Total == 0 {
		fmt.Fprint(p.w, "\r\x1b[Kreading the cluster...")
	} else {
		fmt.Fprintf(p.w, "\r\x1b[Kreading the cluster: %d of %d reads, %d objects", p.last.Done, p.last.Total, p.last.Objects)
	}
	p.shown = true
}

// end stops the line and erases it, if it was shown.
func (p *progressLine) end() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
