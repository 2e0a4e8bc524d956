package usage

import "sync"

// Label values used when a real value cannot be a metric label.
const (
	// OtherLabel stands for every value seen after the bound was reached, and for values longer
	// than MaxLabelLength.
	OtherLabel = "other"
	// UnknownLabel stands for an empty value (no principal label on the sandbox).
	UnknownLabel = "unknown"
	// MaxLabelLength is the longest value kept as a label.
	MaxLabelLength = 63
)

// Bounded admits at most limit distinct label values; later new values collapse to OtherLabel.
// Label values come from tenants (principal labels, template names), so this is what keeps a
// tenant from creating unbounded metric series. Safe for concurrent use.
type Bounded struct {
	mu    sync.Mutex
	limit int
	seen  map[string]struct{}
}

// NewBounded returns a set that admits at most limit distinct values.
func NewBounded(limit int) *Bounded {
	return &Bounded{limit: limit, seen: make(map[string]struct{})}
}

// Value returns v if it is admitted, else OtherLabel (or UnknownLabel for "").
func (b *Bounded) Value(v string) string {
	switch {
	case v == "":
		return UnknownLabel
	case v == OtherLabel || v == UnknownLabel:
		return v
	case len(v) > MaxLabelLength:
		return OtherLabel
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.limit {
		return OtherLabel
	}
	b.seen[v] = struct{}{}
	return v
}
