package ui

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubox-dev/kubox/internal/metrics"
)

// The controller's metrics the pictures draw: claim latency, from the controller first seeing a
// claim to its being Ready (a histogram's sum and count), and claims served.
const (
	claimLatencySum   = "agent_sandbox_claim_controller_startup_latency_ms_sum"
	claimLatencyCount = "agent_sandbox_claim_controller_startup_latency_ms_count"
	claimsCreated     = "agent_sandbox_claim_creation_total"
	// sandboxesGauge counts Sandboxes by labels; a warm pool's members are owned_by
	// metrics.OwnedBySandboxWarmPool.
	sandboxesGauge = "agent_sandboxes"
)

// How often the router scrapes, and how many points it keeps (an hour).
const (
	scrapeInterval = 15 * time.Second
	scrapePoints   = 240
	maxScrapeBytes = 8 << 20
	// maxPoolSeries bounds the (namespace, template) pairs of pool members kept per scrape; a
	// scrape's pairs past it are left out. With scrapePoints points the ring holds at most
	// 240,000 counts (about 15 MiB at worst); a cluster of a hundred pools keeps under 1 MiB.
	maxPoolSeries = 1000
)

// poolKey is the warm-pool members of one template in one namespace.
type poolKey struct{ namespace, template string }

// poolCount is how many of a template's pool members there were at a scrape, and how many of
// them were Ready (the claims they can serve at once).
type poolCount struct{ ready, total float64 }

// sample is what one scrape read: the totals of the series the pictures draw, and the warm
// pools' members.
type sample struct {
	totals map[string]float64
	pools  map[poolKey]poolCount
}

// point is one interval of the controller's metrics.
type point struct {
	Time time.Time `json:"t"`
	// Claims is how many claims became Ready in the interval; LatencyMs their mean latency
	// (absent without claims).
	Claims    float64  `json:"claims"`
	LatencyMs *float64 `json:"latencyMs,omitempty"`
	// Created is how many sandboxes were created or bound for claims in the interval.
	Created float64 `json:"created"`
	// pools is the warm pools' members at the end of the interval, answered only to viewers
	// who may list the namespace's pools (serveMetrics).
	pools map[poolKey]poolCount
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
	// keys holds one copy of each poolKey in the ring, shared by the points.
	keys map[poolKey]poolKey
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
	m, err := s.fetch(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = "scraping " + s.url + ": " + err.Error()
		return
	}
	s.err = ""
	s.add(now(), m)
}

// add records the interval since the previous totals (none for the first scrape, or after the
// controller restarted and its counters fell).
func (s *scraper) add(at time.Time, m sample) {
	totals := m.totals
	prev := s.last
	s.last = totals
	if prev == nil || totals[claimLatencyCount] < prev[claimLatencyCount] {
		return
	}
	p := point{Time: at, Claims: totals[claimLatencyCount] - prev[claimLatencyCount], Created: max(totals[claimsCreated]-prev[claimsCreated], 0),
		pools: s.shareKeys(m.pools)}
	if p.Claims > 0 {
		mean := (totals[claimLatencySum] - prev[claimLatencySum]) / p.Claims
		p.LatencyMs = &mean
	}
	s.points = append(s.points, p)
	if len(s.points) > scrapePoints {
		s.points = s.points[len(s.points)-scrapePoints:]
	}
}

// shareKeys makes pools' keys the copies the ring already holds, so a template's name is kept
// once, not once per point; copies no point uses any more are dropped now and then.
func (s *scraper) shareKeys(pools map[poolKey]poolCount) map[poolKey]poolCount {
	if s.keys == nil || len(s.keys) > 2*maxPoolSeries {
		s.keys = map[poolKey]poolKey{}
		for _, p := range s.points {
			for k := range p.pools {
				s.keys[k] = k
			}
		}
	}
	out := make(map[poolKey]poolCount, len(pools))
	for k, c := range pools {
		shared, ok := s.keys[k]
		if !ok {
			shared = poolKey{strings.Clone(k.namespace), strings.Clone(k.template)}
			s.keys[shared] = shared
		}
		out[shared] = c
	}
	return out
}

// fetch reads the metrics: each series the pictures use summed over its labels, and the pools'
// members.
func (s *scraper) fetch(ctx context.Context) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	res, err := s.client.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return sample{}, &Error{Code: res.StatusCode, Message: res.Status}
	}
	m, dropped := parseMetrics(io.LimitReader(res.Body, maxScrapeBytes))
	if dropped > 0 && s.log != nil {
		s.log.Warn("The dashboard keeps the warm pools of at most maxPoolSeries templates; left some out",
			"maxPoolSeries", maxPoolSeries, "leftOut", dropped)
	}
	return m, nil
}

// parseMetrics reads Prometheus' text format: it sums the samples of the claim series over
// their labels, and agent_sandboxes' warm-pool members per namespace and template (at most
// maxPoolSeries pairs; dropped counts the samples of pairs past it).
func parseMetrics(r io.Reader) (m sample, dropped int) {
	m = sample{totals: map[string]float64{}, pools: map[poolKey]poolCount{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, labels, v, ok := parseLine(sc.Text())
		switch {
		case !ok:
		case name == claimLatencySum || name == claimLatencyCount || name == claimsCreated:
			m.totals[name] += v
		case name == sandboxesGauge:
			if !addPoolMember(m.pools, parseLabels(labels), v) {
				dropped++
			}
		}
	}
	return m, dropped
}

// addPoolMember counts v sandboxes of labels in pools when a warm pool owns them; false when
// their (namespace, template) pair is past maxPoolSeries.
func addPoolMember(pools map[poolKey]poolCount, labels map[string]string, v float64) bool {
	if labels["owned_by"] != metrics.OwnedBySandboxWarmPool {
		return true
	}
	k := poolKey{labels["namespace"], labels["sandbox_template"]}
	c, ok := pools[k]
	if !ok && len(pools) >= maxPoolSeries {
		return false
	}
	c.total += v
	if labels["ready_condition"] == "true" {
		c.ready += v
	}
	pools[k] = c
	return true
}

// parseLine splits a sample line into its name, labels (between the braces) and value; a
// comment, blank or malformed line is not ok.
func parseLine(line string) (name, labels string, v float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", 0, false
	}
	name = line[:strings.IndexAny(line+" ", "{ ")]
	rest := line[len(name):]
	if strings.HasPrefix(rest, "{") {
		end := labelsEnd(rest)
		if end < 0 {
			return "", "", 0, false
		}
		labels, rest = rest[1:end], rest[end+1:]
	}
	// A timestamp may follow the value.
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return name, labels, v, err == nil
}

// labelsEnd returns the index of the brace that closes the labels s opens, skipping quoted
// values (which may hold braces, spaces and escaped quotes); -1 when none does.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return i
		}
	}
	return -1
}

// parseLabels reads name="value" pairs, unescaping the values.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		s = strings.TrimLeft(s, ", ")
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return out
		}
		name := strings.TrimSpace(s[:eq])
		var b strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					b.WriteByte('\n')
					continue
				}
			}
			b.WriteByte(s[i])
		}
		out[name] = b.String()
		s = s[min(i+1, len(s)):]
	}
	return out
}

// serveMetrics answers the points kept, to any viewer the router authenticated: they are
// totals over the controller's namespaces, no object's name.
func (h *Handler) serveMetrics(_ context.Context, w http.ResponseWriter, _ *http.Request, _ *viewer) *Error {
	writeJSON(w, http.StatusOK, h.metricsBody(""))
	return nil
}

// serveNamespaceMetrics answers the points kept and, when the viewer may list the namespace's
// warm pools, its pools' members per template: a template's name is the namespace's own, and
// a viewer who may not list its pools learns none.
func (h *Handler) serveNamespaceMetrics(ctx context.Context, w http.ResponseWriter, r *http.Request, _ *viewer) *Error {
	ns, herr := h.namespace(r)
	if herr != nil {
		return herr
	}
	if h.metrics.url == "" { // nothing scraped: no pools to authorize
		writeJSON(w, http.StatusOK, h.metricsBody(""))
		return nil
	}
	ok, err := h.review(ctx, &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Group: claimGroup, Resource: "sandboxwarmpools"})
	if err != nil {
		return kubeError(err, "asking the API server whether you may list the warm pools of namespace "+ns)
	}
	if !ok {
		body := h.metricsBody("")
		body["poolsDenied"] = "You may not list the warm pools of namespace " + ns + ", so their sizes are not shown."
		writeJSON(w, http.StatusOK, body)
		return nil
	}
	writeJSON(w, http.StatusOK, h.metricsBody(ns))
	return nil
}

// poolSeries is a template's warm-pool members in one namespace over time.
type poolSeries struct {
	Template string      `json:"template"`
	Points   []poolPoint `json:"points"`
}

type poolPoint struct {
	Time  time.Time `json:"t"`
	Ready float64   `json:"ready"`
	Total float64   `json:"total"`
}

// metricsBody is the answer of the metrics operations, with the pools of namespace ns (none
// for "").
func (h *Handler) metricsBody(ns string) map[string]any {
	s := h.metrics
	s.mu.Lock()
	defer s.mu.Unlock()
	body := map[string]any{"configured": s.url != "", "intervalSeconds": scrapeInterval.Seconds(),
		"points": append([]point{}, s.points...), "error": s.err}
	if ns != "" {
		body["pools"] = s.poolsOf(ns)
	}
	return body
}

// poolsOf returns the series of namespace ns's templates, by name. A template absent from a
// scrape had no members then: its series has a point of 0 there once it has begun.
func (s *scraper) poolsOf(ns string) []poolSeries {
	byTemplate := map[string]*poolSeries{}
	for _, p := range s.points {
		for k := range p.pools {
			if k.namespace == ns && byTemplate[k.template] == nil {
				byTemplate[k.template] = &poolSeries{Template: k.template, Points: []poolPoint{}}
			}
		}
		for tmpl, series := range byTemplate {
			c := p.pools[poolKey{ns, tmpl}]
			series.Points = append(series.Points, poolPoint{Time: p.Time, Ready: c.ready, Total: c.total})
		}
	}
	out := make([]poolSeries, 0, len(byTemplate))
	for _, series := range byTemplate {
		out = append(out, *series)
	}
	slices.SortFunc(out, func(a, b poolSeries) int { return strings.Compare(a.Template, b.Template) })
	return out
}
