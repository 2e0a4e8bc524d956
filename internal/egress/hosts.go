package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// HostsFile resolves names from a file in hosts(5) format, read again whenever it changes: the
// way an operator (or a test on kubox's local node) points names at servers of its own without
// touching the node's DNS. A missing file names nothing.
type HostsFile struct {
	path string

	mu    sync.Mutex
	mtime time.Time
	size  int64
	names map[string][]netip.Addr
}

// NewHostsFile returns the resolver of the file at path.
func NewHostsFile(path string) *HostsFile { return &HostsFile{path: path} }

// Lookup returns the addresses the file gives name, and false when it gives none.
func (h *HostsFile) Lookup(name string) ([]netip.Addr, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.refresh(); err != nil {
		return nil, false, err
	}
	addrs, ok := h.names[canonical(name)]
	return addrs, ok, nil
}

// refresh reads the file again when its modification time or size changed.
func (h *HostsFile) refresh() error {
	st, err := os.Stat(h.path)
	if errors.Is(err, fs.ErrNotExist) {
		h.names, h.mtime, h.size = nil, time.Time{}, 0
		return nil
	}
	if err != nil {
		return err
	}
	if h.names != nil && st.ModTime().Equal(h.mtime) && st.Size() == h.size {
		return nil
	}
	data, err := os.ReadFile(h.path)
	if err != nil {
		return err
	}
	names, err := ParseHosts(data)
	if err != nil {
		return fmt.Errorf("%s: %w", h.path, err)
	}
	h.names, h.mtime, h.size = names, st.ModTime(), st.Size()
	return nil
}

// ParseHosts reads hosts(5) lines: an address, then the names it answers; "#" starts a comment.
func ParseHosts(data []byte) (map[string][]netip.Addr, error) {
	names := map[string][]netip.Addr{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		addr, err := netip.ParseAddr(fields[0])
		if err != nil || len(fields) < 2 {
			return nil, fmt.Errorf("line %d: want an IP address followed by names, got %q", n, line)
		}
		for _, name := range fields[1:] {
			names[canonical(name)] = append(names[canonical(name)], addr)
		}
	}
	return names, sc.Err()
}
