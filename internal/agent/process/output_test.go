package process

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type write struct {
	s    Stream
	data string
}

// ev is an Event flattened for comparison.
type ev struct {
	Kind   string
	Stream Stream
	Offset int64
	Data   string
	Length int64
}

func flatten(e Event) ev {
	switch {
	case e.Output != nil:
		return ev{Kind: "out", Stream: e.Output.Stream, Offset: e.Output.Offset, Data: string(e.Output.Data)}
	case e.Dropped != nil:
		return ev{Kind: "drop", Stream: e.Dropped.Stream, Offset: e.Dropped.Offset, Length: e.Dropped.Length}
	default:
		return ev{Kind: "exit"}
	}
}

func TestReplayFollow(t *testing.T) {
	exit := ev{Kind: "exit"}
	cases := map[string]struct {
		limit  int
		writes []write
		from   [numStreams]int64
		want   []ev
	}{
		"merges adjacent chunks of a stream": {
			limit:  100,
			writes: []write{{Stdout, "ab"}, {Stdout, "cd"}, {Stderr, "x"}, {Stdout, "ef"}},
			want: []ev{
				{Kind: "out", Stream: Stdout, Offset: 0, Data: "abcd"},
				{Kind: "out", Stream: Stderr, Offset: 0, Data: "x"},
				{Kind: "out", Stream: Stdout, Offset: 4, Data: "ef"},
				exit,
			},
		},
		"reports what was evicted": {
			limit:  4,
			writes: []write{{Stdout, "ab"}, {Stdout, "cd"}, {Stdout, "ef"}},
			want: []ev{
				{Kind: "drop", Stream: Stdout, Offset: 0, Length: 2},
				{Kind: "out", Stream: Stdout, Offset: 2, Data: "cdef"},
				exit,
			},
		},
		"reports a stream evicted entirely": {
			limit:  3,
			writes: []write{{Stdout, "aa"}, {Stderr, "bb"}, {Stdout, "cc"}},
			want: []ev{
				{Kind: "drop", Stream: Stdout, Offset: 0, Length: 2},
				{Kind: "drop", Stream: Stderr, Offset: 0, Length: 2},
				{Kind: "out", Stream: Stdout, Offset: 2, Data: "cc"},
				exit,
			},
		},
		"resumes inside a chunk": {
			limit:  100,
			writes: []write{{Stdout, "abcd"}, {Stderr, "xy"}, {Stdout, "ef"}},
			from:   [numStreams]int64{Stdout: 3, Stderr: 2},
			want:   []ev{{Kind: "out", Stream: Stdout, Offset: 3, Data: "def"}, exit},
		},
		"resumes past evicted data without a gap": {
			limit:  2,
			writes: []write{{Stdout, "ab"}, {Stdout, "cd"}},
			from:   [numStreams]int64{Stdout: 3},
			want:   []ev{{Kind: "out", Stream: Stdout, Offset: 3, Data: "d"}, exit},
		},
		"keeps the newest chunk even when it is over the limit": {
			limit:  2,
			writes: []write{{PTY, "a"}, {PTY, "bcdef"}},
			want: []ev{
				{Kind: "drop", Stream: PTY, Offset: 0, Length: 1},
				{Kind: "out", Stream: PTY, Offset: 1, Data: "bcdef"},
				exit,
			},
		},
		"nothing written": {limit: 10, want: []ev{exit}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newReplay(tc.limit)
			for _, w := range tc.writes {
				r.append(w.s, []byte(w.data))
			}
			r.finish(ExitStatus{})
			var got []ev
			err := r.follow(context.Background(), tc.from, false, nil, func(e Event) error {
				got = append(got, flatten(e))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplayBoundsEventSize(t *testing.T) {
	r := newReplay(1 << 20)
	chunk := bytes.Repeat([]byte("x"), 40<<10)
	r.append(Stdout, chunk)
	r.append(Stdout, chunk)
	r.finish(ExitStatus{})
	var sizes []int
	if err := r.follow(context.Background(), [numStreams]int64{}, false, nil, func(e Event) error {
		if e.Output != nil {
			sizes = append(sizes, len(e.Output.Data))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{40 << 10, 40 << 10}, sizes); diff != "" {
		t.Errorf("event sizes (-want +got):\n%s", diff)
	}
}

// A follower that falls behind while following is told what it missed and goes on; the producer
// never waits for it.
func TestReplaySlowFollowerDrops(t *testing.T) {
	r := newReplay(4)
	r.append(Stdout, []byte("ab"))
	var got []ev
	first := true
	err := r.follow(context.Background(), [numStreams]int64{}, false, nil, func(e Event) error {
		got = append(got, flatten(e))
		if first {
			// While the follower is busy with its first event, the process writes past the limit.
			first = false
			r.append(Stdout, []byte("cd"))
			r.append(Stdout, []byte("ef"))
			r.append(Stdout, []byte("gh"))
			r.finish(ExitStatus{Code: 1})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []ev{
		{Kind: "out", Stream: Stdout, Offset: 0, Data: "ab"},
		{Kind: "drop", Stream: Stdout, Offset: 2, Length: 2},
		{Kind: "out", Stream: Stdout, Offset: 4, Data: "efgh"},
		{Kind: "exit"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReplayFollowWaitsForOutputAndStopsWithContext(t *testing.T) {
	r := newReplay(100)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan ev, 10)
	errc := make(chan error, 1)
	go func() {
		errc <- r.follow(ctx, [numStreams]int64{}, false, nil, func(e Event) error {
			got <- flatten(e)
			return nil
		})
	}()
	r.append(Stderr, []byte("late"))
	select {
	case e := <-got:
		if diff := cmp.Diff(ev{Kind: "out", Stream: Stderr, Data: "late"}, e); diff != "" {
			t.Errorf("event (-want +got):\n%s", diff)
		}
	case <-time.After(guard):
		t.Fatal("the follower never saw output appended after it started")
	}
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("follow = %v, want context.Canceled", err)
	}
}

// A paced follower holds the producer back instead of losing bytes.
func TestReplayPacedFollowerLosesNothing(t *testing.T) {
	const chunk, chunks = 16 << 10, 64
	r := newReplay(4 * readBytes)
	f := r.pace([numStreams]int64{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for range chunks {
			r.waitRoom()
			r.append(Stdout, make([]byte, chunk))
		}
		r.release()
		r.finish(ExitStatus{})
	}()

	// Nobody reads yet: the producer must stop before the buffer evicts the follower's bytes.
	deadline := time.After(guard)
	for {
		r.mu.Lock()
		waiting, total, base := r.waiting, r.total, r.base
		r.mu.Unlock()
		if waiting == 1 {
			if base != 0 || total > int64(r.limit) {
				t.Fatalf("producer waits only after %d bytes, evicting %d chunks", total, base)
			}
			break
		}
		select {
		case <-deadline:
			t.Fatalf("the producer never waited for the paced follower (wrote %d bytes)", total)
		case <-time.After(time.Millisecond):
		}
	}

	var got int64
	err := r.follow(context.Background(), [numStreams]int64{}, true, f, func(e Event) error {
		if e.Dropped != nil {
			t.Errorf("paced follower was told of dropped bytes: %+v", *e.Dropped)
		}
		if e.Output != nil {
			got += int64(len(e.Output.Data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-produced
	if got != chunk*chunks {
		t.Errorf("received %d bytes, want %d", got, chunk*chunks)
	}
}

// Releasing (the process exited) lets the producer go on without the follower.
func TestReplayReleaseEndsTheHold(t *testing.T) {
	r := newReplay(2 * readBytes)
	f := r.pace([numStreams]int64{})
	r.append(Stdout, make([]byte, 10))
	done := make(chan struct{})
	go func() {
		r.waitRoom()
		close(done)
	}()
	r.release()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("waitRoom still waits after release")
	}
	r.unpace(f)
}
