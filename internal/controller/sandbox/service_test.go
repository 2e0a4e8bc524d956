package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func cport(name string, port int32, proto corev1.Protocol) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: proto}
}

func sport(name string, port int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: proto, TargetPort: intstr.FromInt32(port)}
}

func containerWith(name string, ports ...corev1.ContainerPort) corev1.Container {
	return corev1.Container{Name: name, Image: "registry.invalid/x:1", Ports: ports}
}

// Expected ports follow the inventory (2.1 step 7): container ports of all containers and
// restartable init containers, deduplicated by (port, protocol), the first explicit name wins,
// unnamed ones are p-<port>-<protocol> (suffixed -2, -3.. on a collision), sorted.
func TestServicePorts(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cases := map[string]struct {
		spec corev1.PodSpec
		want []corev1.ServicePort
	}{
		"no ports": {
			spec: corev1.PodSpec{Containers: []corev1.Container{containerWith("main")}},
			want: nil,
		},
		"unnamed port, protocol defaults to TCP": {
			spec: corev1.PodSpec{Containers: []corev1.Container{containerWith("main", cport("", 8080, ""))}},
			want: []corev1.ServicePort{sport("p-8080-tcp", 8080, corev1.ProtocolTCP)},
		},
		"named port keeps its name": {
			spec: corev1.PodSpec{Containers: []corev1.Container{containerWith("main", cport("http", 8080, corev1.ProtocolTCP))}},
			want: []corev1.ServicePort{sport("http", 8080, corev1.ProtocolTCP)},
		},
		"sorted by port across containers": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				containerWith("a", cport("metrics", 9090, corev1.ProtocolTCP), cport("", 443, corev1.ProtocolTCP)),
				containerWith("b", cport("http", 80, corev1.ProtocolTCP)),
			}},
			want: []corev1.ServicePort{
				sport("http", 80, corev1.ProtocolTCP),
				sport("p-443-tcp", 443, corev1.ProtocolTCP),
				sport("metrics", 9090, corev1.ProtocolTCP),
			},
		},
		"same port, two protocols: two ports": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				containerWith("dns", cport("", 53, corev1.ProtocolUDP), cport("", 53, corev1.ProtocolTCP)),
			}},
			want: []corev1.ServicePort{
				sport("p-53-tcp", 53, corev1.ProtocolTCP),
				sport("p-53-udp", 53, corev1.ProtocolUDP),
			},
		},
		"duplicate port: first explicit name wins over an earlier unnamed one": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				containerWith("a", cport("", 8080, corev1.ProtocolTCP)),
				containerWith("b", cport("web", 8080, corev1.ProtocolTCP)),
				containerWith("c", cport("other", 8080, "")),
			}},
			want: []corev1.ServicePort{sport("web", 8080, corev1.ProtocolTCP)},
		},
		"duplicate port: first named one keeps its name": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				containerWith("a", cport("first", 8080, corev1.ProtocolTCP)),
				containerWith("b", cport("second", 8080, corev1.ProtocolTCP)),
			}},
			want: []corev1.ServicePort{sport("first", 8080, corev1.ProtocolTCP)},
		},
		"generated name collides with an explicit one: suffixed": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				containerWith("a", cport("p-80-tcp", 81, corev1.ProtocolTCP), cport("p-80-tcp-2", 82, corev1.ProtocolTCP)),
				containerWith("b", cport("", 80, corev1.ProtocolTCP)),
			}},
			want: []corev1.ServicePort{
				sport("p-80-tcp-3", 80, corev1.ProtocolTCP),
				sport("p-80-tcp", 81, corev1.ProtocolTCP),
				sport("p-80-tcp-2", 82, corev1.ProtocolTCP),
			},
		},
		"sidecars count, ordinary init containers do not": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					containerWith("setup", cport("setup", 7000, corev1.ProtocolTCP)),
					func() corev1.Container {
						c := containerWith("proxy", cport("proxy", 15001, corev1.ProtocolTCP))
						c.RestartPolicy = &always
						return c
					}(),
				},
				Containers: []corev1.Container{containerWith("main", cport("http", 8080, corev1.ProtocolTCP))},
			},
			want: []corev1.ServicePort{
				sport("http", 8080, corev1.ProtocolTCP),
				sport("proxy", 15001, corev1.ProtocolTCP),
			},
		},
		"the same explicit name on two ports: the second gets a generated one": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				containerWith("a", cport("http", 80, corev1.ProtocolTCP)),
				containerWith("b", cport("http", 8080, corev1.ProtocolTCP)),
			}},
			want: []corev1.ServicePort{
				sport("http", 80, corev1.ProtocolTCP),
				sport("p-8080-tcp", 8080, corev1.ProtocolTCP),
			},
		},
		"SCTP is kept and lower-cased in the generated name": {
			spec: corev1.PodSpec{Containers: []corev1.Container{containerWith("main", cport("", 9000, corev1.ProtocolSCTP))}},
			want: []corev1.ServicePort{sport("p-9000-sctp", 9000, corev1.ProtocolSCTP)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := tc.spec.DeepCopy()
			got := servicePorts(spec)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("servicePorts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(&tc.spec, spec); diff != "" {
				t.Errorf("servicePorts changed the pod spec (-before +after):\n%s", diff)
			}
			// Whatever the pod declares, the API server must accept the Service.
			names := map[string]bool{}
			for _, p := range got {
				if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
					t.Errorf("port %d name %q is not a valid Service port name: %v", p.Port, p.Name, errs)
				}
				if names[p.Name] {
					t.Errorf("port name %q is used twice", p.Name)
				}
				names[p.Name] = true
			}
		})
	}
}

func TestBuildService(t *testing.T) {
	sb := withMeta(testSandbox().Service(true).Container("main", "registry.invalid/srv:1", 8080).Obj())
	before := sb.DeepCopy()

	svc, err := (&Reconciler{scheme: testScheme(t)}).buildService(sb)
	if err != nil {
		t.Fatalf("buildService: %v", err)
	}

	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            testName,
			Namespace:       testNS,
			Labels:          map[string]string{sandboxv1beta1.SandboxNameHashLabel: testNameHash},
			OwnerReferences: []metav1.OwnerReference{controllerRef()},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			// Collision-free selector (API.md): the full name, not the 32-bit hash.
			Selector: map[string]string{sandboxv1beta1.SandboxNameLabel: testName},
			Ports:    []corev1.ServicePort{sport("p-8080-tcp", 8080, corev1.ProtocolTCP)},
		},
	}
	if diff := cmp.Diff(want, svc); diff != "" {
		t.Errorf("buildService (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, sb); diff != "" {
		t.Errorf("buildService changed the Sandbox (-before +after):\n%s", diff)
	}
}

// The Service must select the Pod buildPod makes, and only by labels the template cannot forge.
func TestServiceSelectsTheSandboxPod(t *testing.T) {
	r := &Reconciler{scheme: testScheme(t)}
	sb := withMeta(testSandbox().PodLabel("app", "web").Obj())
	svc, err := r.buildService(sb)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := r.buildPod(sb)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod's labels %v", k, v, pod.Labels)
		}
	}
	if len(svc.Spec.Selector) == 0 {
		t.Errorf("empty selector would select every pod in the namespace")
	}
}

func TestHasAll(t *testing.T) {
	cases := []struct {
		have, want map[string]string
		ok         bool
	}{
		{have: nil, want: nil, ok: true},
		{have: map[string]string{"a": "1", "b": "2"}, want: map[string]string{"a": "1"}, ok: true},
		{have: map[string]string{"a": "2"}, want: map[string]string{"a": "1"}, ok: false},
		{have: nil, want: map[string]string{"a": "1"}, ok: false},
	}
	for _, tc := range cases {
		if got := hasAll(tc.have, tc.want); got != tc.ok {
			t.Errorf("hasAll(%v, %v) = %v, want %v", tc.have, tc.want, got, tc.ok)
		}
	}
}
