package devenv

import (
	"fmt"
	"io"
	"time"
)

// Progress prints timestamped steps so a person sees what `up` and `down` are doing.
type Progress struct {
	out   io.Writer
	start time.Time
}

// NewProgress starts the clock.
func NewProgress(out io.Writer) *Progress { return &Progress{out: out, start: time.Now()} }

// Say prints one step.
func (p *Progress) Say(format string, args ...any) {
	_, _ = fmt.Fprintf(p.out, "[%6.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// Elapsed is the time since the clock started.
func (p *Progress) Elapsed() time.Duration { return time.Since(p.start).Round(100 * time.Millisecond) }

// Writer is where long output (tool builds) goes.
func (p *Progress) Writer() io.Writer { return p.out }
