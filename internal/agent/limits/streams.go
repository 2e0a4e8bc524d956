package limits

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// DefaultRetryAfter is how long a refused client is told to wait when NewStreamLimiter is given
// no positive duration.
const DefaultRetryAfter = time.Second

// StreamLimiter bounds how many long-lived streams (exec sessions, terminals, watches, log
// follows) the agent serves at once: each open stream holds one slot until its handler returns.
// A request that finds every slot taken is refused at once (it does not queue) with
// resource_exhausted and a Retry-After header. One StreamLimiter may wrap several handlers, which
// then share its slots.
type StreamLimiter struct {
	slots      chan struct{}
	retryAfter time.Duration
}

// NewStreamLimiter returns a limiter of maxStreams slots that tells refused clients to retry after
// retryAfter (DefaultRetryAfter when not positive). It panics when maxStreams is below 1.
func NewStreamLimiter(maxStreams int, retryAfter time.Duration) *StreamLimiter {
	if maxStreams < 1 {
		panic(fmt.Sprintf("limits.NewStreamLimiter: maxStreams %d is below 1", maxStreams))
	}
	if retryAfter <= 0 {
		retryAfter = DefaultRetryAfter
	}
	return &StreamLimiter{slots: make(chan struct{}, maxStreams), retryAfter: retryAfter}
}

// InUse returns the number of streams being served.
func (l *StreamLimiter) InUse() int { return len(l.slots) }

// Wrap returns a handler that serves a request with next while it holds a slot.
func (l *StreamLimiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case l.slots <- struct{}{}:
		default:
			l.refuse(w, r)
			return
		}
		defer func() { <-l.slots }()
		next.ServeHTTP(w, r)
	})
}

func (l *StreamLimiter) refuse(w http.ResponseWriter, r *http.Request) {
	seconds := int64(math.Ceil(l.retryAfter.Seconds()))
	w.Header().Set("Retry-After", strconv.FormatInt(seconds, 10))
	writeExhausted(w, r, http.StatusTooManyRequests, fmt.Sprintf(
		"the agent already serves %d long-lived streams, its limit; close one, or retry after %ds",
		cap(l.slots), seconds))
}
