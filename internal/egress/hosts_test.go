package egress

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHostsFileFollowsItsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	h := NewHostsFile(path)
	if _, ok, err := h.Lookup("allowed.test"); ok || err != nil {
		t.Fatalf("a missing file named allowed.test (%t, %v)", ok, err)
	}
	write := func(s string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	write("# test hosts\n198.18.0.2 allowed.test API.test.  # servers\n198.18.0.3 allowed.test\n", now)
	addrs, ok, err := h.Lookup("Allowed.Test.")
	if err != nil || !ok {
		t.Fatalf("Lookup = %v, %t, %v", addrs, ok, err)
	}
	if diff := cmp.Diff([]netip.Addr{netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.18.0.3")}, addrs, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if _, ok, _ := h.Lookup("api.test"); !ok {
		t.Error("api.test (written API.test.) not found")
	}
	write("198.18.0.9 denied.test\n", now.Add(time.Second))
	if _, ok, _ := h.Lookup("allowed.test"); ok {
		t.Error("allowed.test still resolves after the file dropped it")
	}
	if _, ok, _ := h.Lookup("denied.test"); !ok {
		t.Error("denied.test, added to the file, does not resolve")
	}
	write("not-an-ip denied.test\n", now.Add(2*time.Second))
	if _, _, err := h.Lookup("denied.test"); err == nil {
		t.Error("a malformed line gave no error")
	}
}
