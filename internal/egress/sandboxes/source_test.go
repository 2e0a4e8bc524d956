package sandboxes

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/egress"
)

func TestPolicy(t *testing.T) {
	got, err := Policy(&sandboxv1beta1.EgressPolicy{AllowDomains: []string{"a.test"}, DenyDomains: []string{"*.b.test"},
		AllowCIDRs: []string{"10.1.2.3/8"}, DenyCIDRs: []string{"2001:db8::/32", "::ffff:203.0.113.0/120"}, Ports: []int32{443, 8443}})
	if err != nil {
		t.Fatal(err)
	}
	want := &egress.Policy{AllowDomains: []string{"a.test"}, DenyDomains: []string{"*.b.test"},
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, DenyCIDRs: []netip.Prefix{netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("203.0.113.0/24")},
		Ports: []int{443, 8443}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("Policy (-want +got):\n%s", diff)
	}
	if _, err := Policy(&sandboxv1beta1.EgressPolicy{DenyCIDRs: []string{"nonsense"}}); err == nil {
		t.Error("Policy accepted a CIDR that is not one")
	}
}

// TestForget: a deleted Sandbox's credentials and CA key leave memory, also when the informer
// only learns of the deletion late.
func TestForget(t *testing.T) {
	s := &Source{built: map[types.UID]*entry{"a": {}, "b": {}}}
	a, b := &sandboxv1beta1.Sandbox{}, &sandboxv1beta1.Sandbox{}
	a.UID, b.UID = "a", "b"
	s.forget(a)
	s.forget(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: b})
	if len(s.built) != 0 {
		t.Errorf("views left after the deletions: %v", s.built)
	}
}

// TestHolder: only a live Pod that is not on its node's network identifies a sandbox by its IP.
func TestHolder(t *testing.T) {
	addr := netip.MustParseAddr("10.0.0.7")
	now := metav1.Now()
	pod := func(name string, mutate func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if mutate != nil {
			mutate(&p)
		}
		return p
	}
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &now }
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	hostNetwork := func(p *corev1.Pod) { p.Spec.HostNetwork = true }
	cases := map[string]struct {
		pods    []corev1.Pod
		want    string // the holder's name
		wantErr string
	}{
		"one live Pod":                        {pods: []corev1.Pod{pod("a", nil)}, want: "a"},
		"none":                                {wantErr: "not a sandbox"},
		"terminating":                         {pods: []corev1.Pod{pod("a", terminating)}, wantErr: "not a sandbox"},
		"succeeded":                           {pods: []corev1.Pod{pod("a", succeeded)}, wantErr: "not a sandbox"},
		"failed":                              {pods: []corev1.Pod{pod("a", failed)}, wantErr: "not a sandbox"},
		"the IP's new Pod beside the old one": {pods: []corev1.Pod{pod("old", terminating), pod("new", nil)}, want: "new"},
		"hostNetwork":                         {pods: []corev1.Pod{pod("h", hostNetwork)}, wantErr: "hostNetwork"},
		"hostNetwork beside a live Pod":       {pods: []corev1.Pod{pod("a", nil), pod("h", hostNetwork)}, wantErr: "hostNetwork"},
		"a terminating hostNetwork Pod":       {pods: []corev1.Pod{pod("h", func(p *corev1.Pod) { hostNetwork(p); terminating(p) }), pod("a", nil)}, want: "a"},
		"two live Pods":                       {pods: []corev1.Pod{pod("a", nil), pod("b", nil)}, wantErr: "2 live Pods"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := holder(c.pods, addr)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("holder: %v; want an error with %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got == nil || got.Name != c.want {
				t.Errorf("holder = %v, %v; want Pod %s", got, err, c.want)
			}
		})
	}
}

func TestTrimPodKeepsWhatIdentifies(t *testing.T) {
	now := metav1.Now()
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &now, Annotations: map[string]string{"x": "y"}},
		Spec:       corev1.PodSpec{HostNetwork: true, NodeName: "n", Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7", PodIPs: []corev1.PodIP{{IP: "10.0.0.7"}}, HostIP: "10.0.0.7"},
	}
	out, err := trimPod(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &now},
		Spec:       corev1.PodSpec{HostNetwork: true},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7", PodIPs: []corev1.PodIP{{IP: "10.0.0.7"}}},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("trimPod (-want +got):\n%s", diff)
	}
}
