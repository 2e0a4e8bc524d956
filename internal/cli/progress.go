package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	tty := false
	_ = withFd(file, func(fd int) { tty = term.IsTerminal(fd) })
	return tty
}

// progress shows what a command waits for on stderr: a spinner with the latest status and the
// time spent on a terminal, a line per status change otherwise (logs, CI).
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time

	mu   sync.Mutex
	msg  string
	stop chan struct{}
	done chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// startProgress starts showing msg on w.
func startProgress(w io.Writer, msg string) *progress {
	p := &progress{w: w, tty: isTerminal(w), start: time.Now(), msg: msg}
	if !p.tty {
		fmt.Fprintln(w, msg)
		return p
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.spin()
	return p
}

func (p *progress) spin() {
	defer close(p.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		p.mu.Lock()
		fmt.Fprintf(p.w, "\r\x1b[K%s %s (%s)", spinnerFrames[i%len(spinnerFrames)], p.msg, time.Since(p.start).Truncate(time.Second))
		p.mu.Unlock()
		select {
		case <-p.stop:
			fmt.Fprint(p.w, "\r\x1b[K")
			return
		case <-t.C:
		}
	}
}

// update replaces the message; without a terminal a changed message is printed on a line.
func (p *progress) update(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == p.msg {
		return
	}
	p.msg = msg
	if !p.tty {
		fmt.Fprintln(p.w, msg)
	}
}

// finish stops the spinner and prints final, when not empty, on a line of its own.
func (p *progress) finish(final string) {
	if p.tty {
		close(p.stop)
		<-p.done
	}
	if final != "" {
		fmt.Fprintf(p.w, "%s (%s)\n", final, time.Since(p.start).Round(100*time.Millisecond))
	}
}

// describeConditions summarizes the Ready condition: "Ready" or "not Ready: Reason: message".
func describeConditions(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, "Ready")
	switch {
	case c == nil:
		return "waiting for the controller"
	case c.Status == metav1.ConditionTrue:
		return "Ready"
	case c.Message == "":
		return "not Ready: " + c.Reason
	}
	return "not Ready: " + c.Reason + ": " + c.Message
}
