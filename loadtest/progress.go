package loadtest

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress writes the live progress line: every second, rewritten in
// place with \r, on a terminal; otherwise one line every 5 s.
type progress struct {
	w       io.Writer // nil: no progress
	tty     bool
	lastLen int // length of the line on screen (terminal)
}

// every is the interval between lines.
func (p *progress) every() time.Duration {
	if p.tty {
		return time.Second
	}
	return 5 * time.Second
}

// show prints one progress line.
func (p *progress) show(line string) {
	switch {
	case p.w == nil:
	case p.tty:
		pad := max(p.lastLen-len(line), 0)
		fmt.Fprint(p.w, "\r"+line+strings.Repeat(" ", pad))
		p.lastLen = len(line)
	default:
		fmt.Fprintln(p.w, line)
	}
}

// end finishes the line on a terminal, so the next output starts afresh.
func (p *progress) end() {
	if p.w != nil && p.tty && p.lastLen > 0 {
		fmt.Fprintln(p.w)
		p.lastLen = 0
	}
}
