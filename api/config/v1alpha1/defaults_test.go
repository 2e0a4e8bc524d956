package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// defaulted is the configuration a file that sets nothing amounts to. The values are written out
// here (API defaults are a contract), not taken from the Default* constants.
func defaulted() *ControllerConfiguration {
	return &ControllerConfiguration{
		TypeMeta:         metav1.TypeMeta{APIVersion: "config.kubox.dev/v1alpha1", Kind: "ControllerConfiguration"},
		ClusterDomain:    "cluster.local",
		ClientConnection: ClientConnection{QPS: ptr.To[float32](-1), Burst: ptr.To[int32](100)},
		Controllers:      Controllers{Sandbox: ControllerSettings{Workers: ptr.To[int32](100)}},
		Metrics:          Metrics{BindAddress: ":8080"},
		Health:           Health{BindAddress: ":8081"},
		LeaderElection:   LeaderElection{Enabled: ptr.To(true), ID: "kubox-controller.kubox.dev"},
	}
}

func TestSetDefaults(t *testing.T) {
	cases := map[string]struct {
		in   *ControllerConfiguration
		want func() *ControllerConfiguration
	}{
		"empty": {
			in:   &ControllerConfiguration{},
			want: defaulted,
		},
		"explicit values are kept, including zero and false": {
			in: &ControllerConfiguration{
				ClusterDomain:    "corp.example.com",
				ClientConnection: ClientConnection{QPS: ptr.To[float32](0), Burst: ptr.To[int32](0)},
				Controllers:      Controllers{Sandbox: ControllerSettings{Workers: ptr.To[int32](0)}},
				Metrics:          Metrics{BindAddress: "0"},
				Health:           Health{BindAddress: "127.0.0.1:9000"},
				LeaderElection:   LeaderElection{Enabled: ptr.To(false), Namespace: "kubox-system", ID: "my-lease"},
			},
			want: func() *ControllerConfiguration {
				return &ControllerConfiguration{
					TypeMeta:         metav1.TypeMeta{APIVersion: "config.kubox.dev/v1alpha1", Kind: "ControllerConfiguration"},
					ClusterDomain:    "corp.example.com",
					ClientConnection: ClientConnection{QPS: ptr.To[float32](0), Burst: ptr.To[int32](0)},
					Controllers:      Controllers{Sandbox: ControllerSettings{Workers: ptr.To[int32](0)}},
					Metrics:          Metrics{BindAddress: "0"},
					Health:           Health{BindAddress: "127.0.0.1:9000"},
					LeaderElection:   LeaderElection{Enabled: ptr.To(false), Namespace: "kubox-system", ID: "my-lease"},
				}
			},
		},
		"idempotent": {
			in:   defaulted(),
			want: defaulted,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			SetDefaults(tc.in)
			if diff := cmp.Diff(tc.want(), tc.in); diff != "" {
				t.Errorf("SetDefaults (-want +got):\n%s", diff)
			}
		})
	}
}
