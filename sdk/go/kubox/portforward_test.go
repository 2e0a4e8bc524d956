package kubox

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func TestRouterServicePort(t *testing.T) {
	cases := map[string]struct {
		ports   []corev1.ServicePort
		want    string
		wantErr bool
	}{
		"8080 among others": {ports: []corev1.ServicePort{{Name: "metrics", Port: 9090}, {Name: "http", Port: 8080}}, want: "http"},
		"the only port":     {ports: []corev1.ServicePort{{Name: "web", Port: 80}}, want: "web"},
		"no 8080":           {ports: []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 81}}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := routerServicePort(&corev1.Service{Spec: corev1.ServiceSpec{Ports: tc.ports}})
			if (err != nil) != tc.wantErr || got.Name != tc.want {
				t.Errorf("routerServicePort = %q, %v; want %q, error %v", got.Name, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestReadyEndpoint(t *testing.T) {
	pod := func(name string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name},
			Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	ports := []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To[int32](9090)}, {Name: ptr.To("http"), Port: ptr.To[int32](18080)}}
	sp := corev1.ServicePort{Name: "http", Port: 8080}
	cases := map[string]struct {
		slices   []discoveryv1.EndpointSlice
		wantPod  string
		wantPort int32
	}{
		"first ready pod, the target port": {slices: []discoveryv1.EndpointSlice{{Ports: ports,
			Endpoints: []discoveryv1.Endpoint{pod("not-ready", ptr.To(false)), pod("router-b", ptr.To(true))}}},
			wantPod: "router-b", wantPort: 18080},
		"unknown readiness counts as ready": {slices: []discoveryv1.EndpointSlice{{Ports: ports,
			Endpoints: []discoveryv1.Endpoint{pod("router-a", nil)}}}, wantPod: "router-a", wantPort: 18080},
		"no ready pod": {slices: []discoveryv1.EndpointSlice{{Ports: ports, Endpoints: []discoveryv1.Endpoint{pod("x", ptr.To(false))}}}},
		"slice without the port": {slices: []discoveryv1.EndpointSlice{{Ports: ports[:1],
			Endpoints: []discoveryv1.Endpoint{pod("router-a", nil)}}}},
		"not a pod": {slices: []discoveryv1.EndpointSlice{{Ports: ports,
			Endpoints: []discoveryv1.Endpoint{{TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "n"}}}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotPod, gotPort := readyEndpoint(tc.slices, sp)
			if gotPod != tc.wantPod || gotPort != tc.wantPort {
				t.Errorf("readyEndpoint = %q, %d; want %q, %d", gotPod, gotPort, tc.wantPod, tc.wantPort)
			}
		})
	}
}

func TestPortForwardURL(t *testing.T) {
	u, err := portForwardURL(&rest.Config{Host: "https://kube.example:6443/prefix"}, "kubox-system", "router-0")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.String(), "https://kube.example:6443/prefix/api/v1/namespaces/kubox-system/pods/router-0/portforward"; got != want {
		t.Errorf("portForwardURL = %s; want %s", got, want)
	}
}
