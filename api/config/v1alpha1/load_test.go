package v1alpha1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const header = "apiVersion: config.kubox.dev/v1alpha1\nkind: ControllerConfiguration\n"

func TestLoad(t *testing.T) {
	cases := map[string]struct {
		content string
		want    func() *ControllerConfiguration
	}{
		"only apiVersion and kind: all defaults": {
			content: header,
			want:    defaulted,
		},
		"set fields are kept, the rest defaulted": {
			content: header + `
clusterDomain: corp.example.com
clientConnection:
  qps: 50
controllers:
  sandbox:
    workers: 8
  sandboxWarmPool:
    replenishDelay: 500ms
    maxRefillRate: 2.5
metrics:
  bindAddress: "0"
leaderElection:
  enabled: false
  namespace: kubox-system
`,
			want: func() *ControllerConfiguration {
				c := defaulted()
				c.ClusterDomain = "corp.example.com"
				c.ClientConnection.QPS = ptr.To[float32](50)
				c.Controllers.Sandbox.Workers = ptr.To[int32](8)
				c.Controllers.SandboxWarmPool.ReplenishDelay = &metav1.Duration{Duration: 500 * time.Millisecond}
				c.Controllers.SandboxWarmPool.MaxRefillRate = ptr.To[float32](2.5)
				c.Metrics.BindAddress = "0"
				c.LeaderElection.Enabled = ptr.To(false)
				c.LeaderElection.Namespace = "kubox-system"
				return c
			},
		},
		"surrounding blank lines are fine": {
			content: "\n\n" + header + "\n\n",
			want:    defaulted,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Load(writeConfig(t, tc.content))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.want(), got); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadWithoutFileIsAllDefaults(t *testing.T) {
	got, err := Load("")
	if err != nil {
		t.Fatalf(`Load(""): %v`, err)
	}
	if diff := cmp.Diff(defaulted(), got); diff != "" {
		t.Errorf(`Load("") (-want +got):\n%s`, diff)
	}
}

// A bad file is rejected with a message that says what is wrong and where.
func TestLoadRejects(t *testing.T) {
	cases := map[string]struct {
		content string
		// wantInError are substrings the error must contain.
		wantInError []string
	}{
		"unknown top-level field": {
			content:     header + "clusterDomian: corp.example.com\n",
			wantInError: []string{"clusterDomian"},
		},
		"unknown nested field": {
			content:     header + "controllers:\n  sandbox:\n    worker: 3\n",
			wantInError: []string{"worker"},
		},
		"wrong apiVersion": {
			content:     "apiVersion: config.kubox.dev/v1beta9\nkind: ControllerConfiguration\n",
			wantInError: []string{"config.kubox.dev/v1alpha1", "config.kubox.dev/v1beta9"},
		},
		"wrong kind": {
			content:     "apiVersion: config.kubox.dev/v1alpha1\nkind: Sandbox\n",
			wantInError: []string{"ControllerConfiguration", `"Sandbox"`},
		},
		"missing apiVersion and kind": {
			content:     "clusterDomain: corp.example.com\n",
			wantInError: []string{"config.kubox.dev/v1alpha1", "ControllerConfiguration"},
		},
		"empty file": {
			content:     "",
			wantInError: []string{"config.kubox.dev/v1alpha1", "ControllerConfiguration"},
		},
		"wrong type": {
			content:     header + "controllers:\n  sandbox:\n    workers: many\n",
			wantInError: []string{"workers"},
		},
		"not YAML": {
			content:     header + "clusterDomain: [unclosed\n",
			wantInError: []string{"parsing"},
		},
		"duplicate key": {
			content:     header + "clusterDomain: a.example\nclusterDomain: b.example\n",
			wantInError: []string{"clusterDomain"},
		},
		"invalid value: reported with its path": {
			content:     header + "controllers:\n  sandbox:\n    workers: 0\n",
			wantInError: []string{"controllers.sandbox.workers", "invalid"},
		},
		"several invalid values: all reported": {
			content:     header + "clusterDomain: Not_A_Domain\nclientConnection:\n  burst: -5\n",
			wantInError: []string{"clusterDomain", "clientConnection.burst"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.content)
			got, err := Load(path)
			if err == nil {
				t.Fatalf("Load accepted %q: %+v", tc.content, got)
			}
			if got != nil {
				t.Errorf("Load returned a configuration with its error: %+v", got)
			}
			for _, s := range append(tc.wantInError, path) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(%q) error = %v, want one naming the file", path, err)
	}
}
