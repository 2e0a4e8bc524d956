package ui

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The controller's metrics the pictures draw: claim latency, from the controller first seeing a
// claim to its being Ready (a histogram's sum and count), and claims served.
const (
	claimLatencySum   = "agent_sandbox_claim_controller_startup_latency_ms_sum"
	claimLatencyCount = "agent_sandbox_claim_controller_startup_latency_ms_count"
	claimsCreated     = "agent_sandbox_claim_creation_total"
)

// How often the router scrapes, and how many points it keeps (an hour).
const (
	scrapeInterval = 15 * time.Second
	scrapePoints   = 240
	maxScrapeBytes = 8 << 20
)

// point is one interval of the controller's metrics.
type point struct {
	Time time.Time `json:"t"`
	// Claims is how many claims became Ready in the interval; LatencyMs their mean latency
	// (absent without claims).
	Claims    float64  `json:"claims"`
	LatencyMs *float64 `json:"latencyMs,omitempty"`
	// Created is how many sandboxes were created or bound for claims in the interval.
	Created float64 `json:"created"`
}

// scraper keeps the last scrapePoints intervals of the controller's metrics in a ring.
type scraper struct {
	url    string
	log    *slog.Logger
	client *http.Client

	mu     sync.Mutex
	points []point
	last   map[string]float64 // the previous scrape's totals
	err    string
}

func newScraper(url string, log *slog.Logger) *scraper {
	return &scraper{url: url, log: log, client: &http.Client{Timeout: 10 * time.Second}}
}

// run scrapes every scrapeInterval until ctx ends.
func (s *scraper) run(ctx context.Context) {
	if s.url == "" {
		return
	}
	t := time.NewTicker(scrapeInterval)
	defer t.Stop()
	for {
		s.scrape(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *scraper) scrape(ctx context.Context) {
	totals, err := s.fetch(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = "scraping " + s.url + ": " + err.Error()
		return
	}
	s.err = ""
	s.add(now(), totals)
}

// add records the interval since the previous totals (none for the first scrape, or after the
// controller restarted and its counters fell).
func (s *scraper) add(at time.Time, totals map[string]float64) {
	prev := s.last
	s.last = totals
	if prev == nil || totals[claimLatencyCount] < prev[claimLatencyCount] {
		return
	}
	p := point{Time: at, Claims: totals[claimLatencyCount] - prev[claimLatencyCount], Created: max(totals[claimsCreated]-prev[claimsCreated], 0)}
	if p.Claims > 0 {
		mean := (totals[claimLatencySum] - prev[claimLatencySum]) / p.Claims
		p.LatencyMs = &mean
	}
	s.points = append(s.points, p)
	if len(s.points) > scrapePoints {
		s.points = s.points[len(s.points)-scrapePoints:]
	}
}

// fetch reads the metrics and sums each series the pictures use over its labels.
func (s *scraper) fetch(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	res, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return nil, &Error{Code: res.StatusCode, Message: res.Status}
	}
	return sumSeries(io.LimitReader(res.Body, maxScrapeBytes), claimLatencySum, claimLatencyCount, claimsCreated), nil
}

// sumSeries reads Prometheus' text format and sums the samples of each of names.
func sumSeries(r io.Reader, names ...string) map[string]float64 {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	totals := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line+" ", "{ ")]
		if !want[name] {
			continue
		}
		// The value follows the labels (which may hold spaces); a timestamp may follow it.
		rest := line[len(name):]
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			totals[name] += v
		}
	}
	return totals
}

// serveMetrics answers the points kept, to any viewer the router authenticated: they are
// totals over the controller's namespaces, no object's name.
func (h *Handler) serveMetrics(_ context.Context, w http.ResponseWriter, _ *http.Request, _ *viewer) *Error {
	s := h.metrics
	s.mu.Lock()
	body := map[string]any{"configured": s.url != "", "intervalSeconds": scrapeInterval.Seconds(),
		"points": append([]point{}, s.points...), "error": s.err}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, body)
	return nil
}
