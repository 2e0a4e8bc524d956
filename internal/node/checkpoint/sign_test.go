package checkpoint

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// signatureVector is what the patched gVisor shim's kubox_restore_test.go expects for the same
// key, snapshot and manifest (kuboxTestSignatureVector): kubox-node and the shim agree.
const signatureVector = "48275a0c702b2b6af720a35106ff68ce5c5d3c108bfdd0c8a08f646b6675974c"

func TestSignatureVector(t *testing.T) {
	got := Key("0123456789abcdef0123456789abcdef").signature("team-a", "s1", []byte(`{"version":1}`+"\n"))
	if diff := cmp.Diff(signatureVector, hex.EncodeToString(got)); diff != "" {
		t.Errorf("signature (-want +got):\n%s", diff)
	}
}

// signedSnapshot writes a complete checkpoint directory <tmp>/team-a/s1 signed with key.
func signedSnapshot(t *testing.T, key Key) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "team-a", "s1")
	must(t, os.MkdirAll(filepath.Join(dir, "image"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "image", "checkpoint.img"), []byte("memory"), 0o600))
	must(t, writeManifest(dir, &Manifest{Version: 1, Kind: Full, Pod: PodRef{Namespace: "team-a"}}))
	must(t, key.Sign(dir, "team-a", "s1"))
	return dir
}

func TestKeyVerifyRefusesWhatKuboxNodeDidNotSign(t *testing.T) {
	key, err := NewKey()
	must(t, err)
	other, err := NewKey()
	must(t, err)
	for name, tc := range map[string]struct {
		tamper   func(t *testing.T, dir string)
		key      Key
		ns, name string
		wantErr  error
	}{
		"signed":       {},
		"no signature": {tamper: func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, SignatureFile))) }, wantErr: ErrUnsigned},
		"manifest edited after signing": {tamper: func(t *testing.T, dir string) {
			p := filepath.Join(dir, ManifestFile)
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, append(b, ' '), 0o644))
		}, wantErr: ErrUnsigned},
		"manifest rewritten to match planted files": {tamper: func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "image", "checkpoint.img"), []byte("other memory"), 0o600))
			must(t, writeManifest(dir, &Manifest{Version: 1, Kind: Full, Pod: PodRef{Namespace: "team-a"}}))
		}, wantErr: ErrUnsigned},
		"file changed, manifest kept": {tamper: func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "image", "checkpoint.img"), []byte("MEMORY"), 0o600))
		}, wantErr: ErrIncomplete},
		"signed with another key":    {key: other, wantErr: ErrUnsigned},
		"moved to another namespace": {ns: "team-b", wantErr: ErrUnsigned},
		"moved to another name":      {name: "s2", wantErr: ErrUnsigned},
		"no key":                     {key: Key{}, wantErr: ErrUnsigned},
		"manifest is a link": {tamper: func(t *testing.T, dir string) {
			p := filepath.Join(dir, ManifestFile)
			must(t, os.Rename(p, p+".real"))
			must(t, os.Symlink(p+".real", p))
		}, wantErr: ErrIncomplete},
	} {
		t.Run(name, func(t *testing.T) {
			dir := signedSnapshot(t, key)
			if tc.tamper != nil {
				tc.tamper(t, dir)
			}
			k, ns, n := key, "team-a", "s1"
			if tc.key != nil {
				k = tc.key
			}
			if tc.ns != "" {
				ns = tc.ns
			}
			if tc.name != "" {
				n = tc.name
			}
			_, err := k.Verify(dir, ns, n)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("Verify: %v; want %v", err, tc.wantErr)
			}
		})
	}
}

func TestKeyFile(t *testing.T) {
	key, err := NewKey()
	must(t, err)
	for name, tc := range map[string]struct {
		write   func(t *testing.T, path string)
		wantErr bool
	}{
		"written by WriteKeyFile": {write: func(t *testing.T, path string) { must(t, WriteKeyFile(path, key)) }},
		"readable by others": {write: func(t *testing.T, path string) {
			must(t, WriteKeyFile(path, key))
			must(t, os.Chmod(path, 0o644))
		}, wantErr: true},
		"a link": {write: func(t *testing.T, path string) {
			must(t, WriteKeyFile(path+".real", key))
			must(t, os.Symlink(path+".real", path))
		}, wantErr: true},
		"too short": {write: func(t *testing.T, path string) { must(t, os.WriteFile(path, []byte("abcd\n"), 0o600)) }, wantErr: true},
		"missing":   {write: func(*testing.T, string) {}, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key", "manifest.key")
			must(t, os.MkdirAll(filepath.Dir(path), 0o700))
			tc.write(t, path)
			got, err := ReadKeyFile(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ReadKeyFile: %v; want error %v", err, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(key, got); diff != "" {
					t.Errorf("key (-want +got):\n%s", diff)
				}
			}
		})
	}
}
