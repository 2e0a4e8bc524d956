package process

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// Stream names an output stream of a process.
type Stream int

// The output streams. A process on a PTY has one stream, PTY; others have Stdout and Stderr.
const (
	Stdout Stream = iota
	Stderr
	PTY
	numStreams
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	case PTY:
		return "pty"
	}
	return "unknown"
}

// Output is a chunk of a stream: Data starts at byte Offset of Stream.
type Output struct {
	Stream Stream
	Offset int64
	Data   []byte
}

// Dropped reports bytes [Offset, Offset+Length) of Stream that left the replay buffer before a
// subscriber read them.
type Dropped struct {
	Stream Stream
	Offset int64
	Length int64
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	// Code is the exit status, or 128 plus the signal number when a signal killed the process.
	Code int
	// Signal is the signal that killed the process, or 0 when it exited.
	Signal syscall.Signal
	// TimedOut is true when the agent stopped the process group because its timeout passed; Code
	// and Signal are then how the process ended (its own exit on SIGTERM, SIGTERM, or SIGKILL).
	TimedOut bool
	// At is when the agent reaped the process.
	At time.Time
}

// Event is one event of a process's output, exactly one field set.
type Event struct {
	Output  *Output
	Dropped *Dropped
	// Exit is the last event: every output byte was delivered or reported dropped before it.
	Exit *ExitStatus
}

const (
	// maxEventBytes bounds the data of one Output event after merging adjacent chunks.
	maxEventBytes = 64 << 10
	// maxBatchBytes bounds how much a follower copies out per lock hold.
	maxBatchBytes = 256 << 10
	// readBytes is the most one read of an output stream returns.
	readBytes = 64 << 10
)

// replay keeps the last limit bytes of a process's output as the chunks the readers appended, in
// the order they were written (stdout and stderr interleaved), and wakes followers on every change.
// Producers do not wait for followers: a follower that falls more than limit bytes behind gets a
// Dropped event for what it missed. The exception is a paced follower (flow control, which a client
// asks for): while one is running, the readers stop reading the process's output whenever it is too
// far behind to take another read without losing bytes, until the process exits (release).
type replay struct {
	mu      sync.Mutex
	limit   int
	chunks  []Output // retained chunks, oldest first; chunks[i] has sequence number base+i
	base    int64
	size    int
	written [numStreams]int64
	total   int64         // sum of written
	wake    chan struct{} // closed and replaced on every change
	exit    *ExitStatus   // set once the output is complete and the process was reaped

	paced    map[*follower]struct{}
	room     chan struct{} // closed and replaced when a paced follower advances or leaves
	released bool          // the process exited: readers no longer wait for paced followers
	waiting  int           // readers waiting in waitRoom
}

func newReplay(limit int) *replay {
	return &replay{limit: limit, wake: make(chan struct{}), room: make(chan struct{}), paced: map[*follower]struct{}{}}
}

// waitRoom returns once every paced follower can take another read of each stream without the
// buffer evicting bytes it has not collected. Two streams may read at once, hence the two reads of
// margin; a buffer smaller than that lets one read through at a time and may still drop.
func (r *replay) waitRoom() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.released {
		full := false
		for f := range r.paced {
			if lag := r.total - f.delivered(); lag > 0 && lag+2*readBytes > int64(r.limit) {
				full = true
				break
			}
		}
		if !full {
			return
		}
		room := r.room
		r.waiting++
		r.mu.Unlock()
		<-room
		r.mu.Lock()
		r.waiting--
	}
}

// release stops readers waiting for paced followers; called when the process has exited, after
// which at most a pipe buffer per stream remains to read.
func (r *replay) release() {
	r.mu.Lock()
	r.released = true
	r.roomChanged()
	r.mu.Unlock()
}

func (r *replay) roomChanged() {
	close(r.room)
	r.room = make(chan struct{})
}

// append adds data (owned by the replay from now on) to stream s and evicts the oldest chunks over
// the limit, always keeping the newest.
func (r *replay) append(s Stream, data []byte) {
	r.mu.Lock()
	r.chunks = append(r.chunks, Output{Stream: s, Offset: r.written[s], Data: data})
	r.written[s] += int64(len(data))
	r.total += int64(len(data))
	r.size += len(data)
	for r.size > r.limit && len(r.chunks) > 1 {
		r.size -= len(r.chunks[0].Data)
		r.chunks[0] = Output{}
		r.chunks = r.chunks[1:]
		r.base++
	}
	r.broadcast()
	r.mu.Unlock()
}

// finish records the exit; followers send it after the last output.
func (r *replay) finish(exit ExitStatus) {
	r.mu.Lock()
	r.exit = &exit
	r.broadcast()
	r.mu.Unlock()
}

func (r *replay) broadcast() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// totals is how many bytes each stream has written.
func (r *replay) totals() [numStreams]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written
}

// pace registers a paced follower at the offsets from. Registered when the process starts (from
// zero), it holds the output for a client that asked for flow control in its start call until
// follow adopts it, or unpace drops it.
func (r *replay) pace(from [numStreams]int64) *follower {
	f := &follower{r: r, want: from}
	r.mu.Lock()
	r.paced[f] = struct{}{}
	r.mu.Unlock()
	return f
}

func (r *replay) unpace(f *follower) {
	r.mu.Lock()
	delete(r.paced, f)
	r.roomChanged()
	r.mu.Unlock()
}

// follow sends the output from the offsets in from (per stream), as it is written, then the exit.
// It returns nil after sending the exit, ctx's error when ctx ends first, or send's error. A paced
// follower holds the process's output back rather than miss any of it (see replay); f, when not
// nil, is one from pace, which follow adopts (from is then ignored).
func (r *replay) follow(ctx context.Context, from [numStreams]int64, paced bool, f *follower, send func(Event) error) error {
	switch {
	case f != nil:
		defer r.unpace(f)
	case paced:
		f = r.pace(from)
		defer r.unpace(f)
	default:
		f = &follower{r: r, want: from}
	}
	for {
		r.mu.Lock()
		evs, done, wake := f.collect()
		if paced && len(evs) > 0 {
			r.roomChanged()
		}
		r.mu.Unlock()
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// follower is the position of one follow call.
type follower struct {
	r    *replay
	next int64 // sequence number of the next chunk to look at
	want [numStreams]int64
}

// collect copies out the events available now (under the replay's lock). done is true when the
// returned events end with the exit.
func (f *follower) collect() (evs []Event, done bool, wake chan struct{}) {
	r := f.r
	if f.next < r.base {
		// Chunks this follower has not seen were evicted: report each stream's gap up to its first
		// retained byte.
		first := r.written
		for i := len(r.chunks) - 1; i >= 0; i-- {
			first[r.chunks[i].Stream] = r.chunks[i].Offset
		}
		for s := range numStreams {
			if f.want[s] < first[s] {
				evs = append(evs, f.drop(s, first[s]))
			}
		}
		f.next = r.base
	}
	bytes := 0
	owned := false // whether the last event's Data is a buffer of this follower's own
	for ; f.next < r.base+int64(len(r.chunks)) && bytes < maxBatchBytes; f.next++ {
		c := r.chunks[f.next-r.base]
		end := c.Offset + int64(len(c.Data))
		if end <= f.want[c.Stream] {
			continue
		}
		if c.Offset > f.want[c.Stream] {
			evs = append(evs, f.drop(c.Stream, c.Offset))
		}
		data := c.Data[f.want[c.Stream]-c.Offset:]
		bytes += len(data)
		if n := len(evs); n > 0 && evs[n-1].Output != nil && evs[n-1].Output.Stream == c.Stream &&
			len(evs[n-1].Output.Data)+len(data) <= maxEventBytes {
			last := evs[n-1].Output
			if !owned {
				last.Data = append(make([]byte, 0, maxEventBytes), last.Data...)
				owned = true
			}
			last.Data = append(last.Data, data...)
		} else {
			evs = append(evs, Event{Output: &Output{Stream: c.Stream, Offset: f.want[c.Stream], Data: data}})
			owned = false
		}
		f.want[c.Stream] = end
	}
	if r.exit != nil && f.next == r.base+int64(len(r.chunks)) {
		for s := range numStreams {
			if f.want[s] < r.written[s] {
				evs = append(evs, f.drop(s, r.written[s]))
			}
		}
		exit := *r.exit
		return append(evs, Event{Exit: &exit}), true, nil
	}
	return evs, false, r.wake
}

// delivered is how many bytes, all streams together, the follower has collected or skipped.
func (f *follower) delivered() int64 {
	var n int64
	for _, w := range f.want {
		n += w
	}
	return n
}

// drop reports stream s's bytes from the follower's position up to to as dropped.
func (f *follower) drop(s Stream, to int64) Event {
	ev := Event{Dropped: &Dropped{Stream: s, Offset: f.want[s], Length: to - f.want[s]}}
	f.want[s] = to
	return ev
}
