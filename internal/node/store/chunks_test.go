package store

import (
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// TestCheckIndexRefusesABadChunkName: a file list whose chunk names are not SHA-256s in lowercase
// hex (a path, a key of another prefix, upper case, a short name) is refused before any chunk is
// downloaded, whatever the rest of the list says: the chunk name becomes an object key.
func TestCheckIndexRefusesABadChunkName(t *testing.T) {
	good := strings.Repeat("ab", 32)
	m := &checkpoint.Manifest{Files: []checkpoint.File{{Path: "image/checkpoint.img", Size: 10}}}
	for name, tc := range map[string]struct {
		chunk   string
		wantErr bool
	}{
		"a SHA-256 in lowercase hex":       {chunk: good},
		"a path up the prefix":             {chunk: "../snapshots/team-b/snap/manifest.json", wantErr: true},
		"a chunk of another prefix":        {chunk: "../../cluster-b/chunks/" + good, wantErr: true},
		"upper case hex":                   {chunk: strings.ToUpper(good), wantErr: true},
		"63 hex digits":                    {chunk: good[1:], wantErr: true},
		"65 hex digits":                    {chunk: good + "a", wantErr: true},
		"64 characters that are not hex":   {chunk: strings.Repeat("zz", 32), wantErr: true},
		"a hex name ending in a separator": {chunk: good[2:] + "/.", wantErr: true},
		"empty":                            {chunk: "", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkIndex(m, []indexEntry{{Path: "image", Dir: true}, {Path: "image/checkpoint.img", Size: 10, Chunks: []string{tc.chunk}}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("checkIndex with chunk %q: %v; want an error %t", tc.chunk, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "image/checkpoint.img") {
				t.Errorf("checkIndex's error %q does not name the file whose chunk it refused", err)
			}
		})
	}
}
