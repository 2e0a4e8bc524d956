package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/internal/objstore"
)

// escapingNames are snapshot names and namespaces crafted to leave the store's folder or prefix.
var escapingNames = map[string][2]string{
	"a name up the tree":         {"team-a", "../../team-b/snap"},
	"a name with a separator":    {"team-a", "snap/../../x"},
	"a namespace up the tree":    {"..", "snap"},
	"an absolute name":           {"team-a", "/etc"},
	"a name that is only a dot":  {"team-a", "."},
	"an empty name":              {"team-a", ""},
	"a name with upper case":     {"team-a", "Snap"},
	"a name longer than a label": {"team-a", strings.Repeat("a", 64)},
}

// refused reports whether err refuses the snapshot nn, naming it.
func refused(err error, nn [2]string) bool {
	return err != nil && strings.Contains(err.Error(), fmt.Sprintf("%q", nn[0]+"/"+nn[1]))
}

// TestDirRefusesANameThatEscapes performs the attack of a snapshot name crafted to escape the
// store's folder: every call of Dir with such a name fails, naming it, and touches nothing
// outside the store (a folder beside the store, which Delete would remove, is left).
func TestDirRefusesANameThatEscapes(t *testing.T) {
	for name, nn := range escapingNames {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			victim := filepath.Join(parent, "store", "team-b", "snap") // where team-a/../../team-b/snap leads
			if err := os.MkdirAll(victim, 0o700); err != nil {
				t.Fatal(err)
			}
			d := Dir{Root: filepath.Join(parent, "store", "root"), Key: testKey}
			if err := d.Delete(t.Context(), nn[0], nn[1]); !refused(err, nn) {
				t.Errorf("Delete(%q, %q) = %v; want it refused, naming the snapshot", nn[0], nn[1], err)
			}
			if _, err := d.Has(t.Context(), nn[0], nn[1]); !refused(err, nn) {
				t.Errorf("Has(%q, %q) = %v; want it refused, naming the snapshot", nn[0], nn[1], err)
			}
			if err := d.Get(t.Context(), nn[0], nn[1], filepath.Join(parent, "out")); !refused(err, nn) {
				t.Errorf("Get(%q, %q) = %v; want it refused, naming the snapshot", nn[0], nn[1], err)
			}
			if err := d.Put(t.Context(), nn[0], nn[1], snapshotDir(t)); !refused(err, nn) {
				t.Errorf("Put(%q, %q) = %v; want it refused, naming the snapshot", nn[0], nn[1], err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("the folder beside the store after the calls: %v; want it left", err)
			}
		})
	}
}

// TestS3RefusesANameThatEscapes: S3 refuses the same names before it builds an object key, so no
// request reaches the bucket (the client points at a port where nothing listens).
func TestS3RefusesANameThatEscapes(t *testing.T) {
	creds := t.TempDir()
	for _, f := range []string{"id", "secret"} {
		if err := os.WriteFile(filepath.Join(creds, f), []byte("test"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewS3(objstore.Config{Endpoint: "127.0.0.1:1", Bucket: "b", Prefix: "cluster-a", Insecure: true,
		AccessKeyIDFile: filepath.Join(creds, "id"), SecretAccessKeyFile: filepath.Join(creds, "secret")}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, nn := range escapingNames {
		t.Run(name, func(t *testing.T) {
			if err := s.Delete(t.Context(), nn[0], nn[1]); !refused(err, nn) {
				t.Errorf("Delete(%q, %q) = %v; want it refused, naming the snapshot", nn[0], nn[1], err)
			}
			if _, err := s.Has(t.Context(), nn[0], nn[1]); !refused(err, nn) {
				t.Errorf("Has(%q, %q) = %v; want it refused, naming the snapshot", nn[0], nn[1], err)
			}
			if err := s.Get(t.Context(), nn[0], nn[1], filepath.Join(t.TempDir(), "out")); !refused(err, nn) {
				t.Errorf("Get(%q, %q) = %v; want it refused, naming the snapshot", nn[0], nn[1], err)
			}
		})
	}
}

// TestDescribeSaysWhereWithoutCredentials: status.store of a SandboxSnapshot comes from Describe,
// which names the store's kind and the snapshot's place in it, never a credential, and nothing
// for a name that is not a snapshot's.
func TestDescribeSaysWhereWithoutCredentials(t *testing.T) {
	creds := t.TempDir()
	for f, v := range map[string]string{"id": "AKIDSECRETID", "secret": "s3cr3t-access-key"} {
		if err := os.WriteFile(filepath.Join(creds, f), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s3, err := NewS3(objstore.Config{Endpoint: "s3.example.com:9000", Bucket: "snaps", Prefix: "cluster-a",
		AccessKeyIDFile: filepath.Join(creds, "id"), SecretAccessKeyFile: filepath.Join(creds, "secret")}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		st                Store
		ns, snap          string
		wantKind, wantLoc string
	}{
		"S3":                  {st: s3, ns: "team-a", snap: "uid-1", wantKind: KindS3, wantLoc: "s3://s3.example.com:9000/snaps/cluster-a/snapshots/team-a/uid-1"},
		"a folder":            {st: Dir{Root: "/mnt/store"}, ns: "team-a", snap: "uid-1", wantKind: KindFilesystem, wantLoc: "/mnt/store/team-a/uid-1"},
		"a name that escapes": {st: Dir{Root: "/mnt/store"}, ns: "team-a", snap: "../team-b"},
	} {
		t.Run(name, func(t *testing.T) {
			kind, loc := Describe(tc.st, tc.ns, tc.snap)
			if kind != tc.wantKind || loc != tc.wantLoc {
				t.Errorf("Describe = %q, %q; want %q, %q", kind, loc, tc.wantKind, tc.wantLoc)
			}
			if strings.Contains(loc, "AKID") || strings.Contains(loc, "s3cr3t") {
				t.Errorf("Describe's location %q holds a credential", loc)
			}
		})
	}
}
