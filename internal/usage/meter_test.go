package usage

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func TestMeter(t *testing.T) {
	req := Requests{CPUMilli: 500, MemoryBytes: 2 << 30} // 0.5 core, 2 GiB
	type obs struct {
		sec   int
		state State
	}
	cases := map[string]struct {
		obs  []obs
		end  int
		want Figures
	}{
		"pending only counts nothing": {
			obs: []obs{{0, StatePending}}, end: 100,
			want: Figures{},
		},
		"running then deleted": {
			obs: []obs{{0, StatePending}, {10, StateRunning}}, end: 110,
			want: Figures{RunningSeconds: 100, RequestedCPUCoreSeconds: 50, RequestedMemoryGiBSeconds: 200},
		},
		"suspend and wake counts a wake": {
			obs: []obs{{0, StateRunning}, {60, StateSuspended}, {160, StateRunning}}, end: 200,
			want: Figures{RunningSeconds: 100, SuspendedSeconds: 100, Wakes: 1,
				RequestedCPUCoreSeconds: 50, RequestedMemoryGiBSeconds: 200},
		},
		"a resume passes through pending and is still a wake": {
			obs: []obs{{0, StateRunning}, {60, StateSuspended}, {160, StatePending}, {170, StateRunning}}, end: 200,
			want: Figures{RunningSeconds: 90, SuspendedSeconds: 100, Wakes: 1,
				RequestedCPUCoreSeconds: 45, RequestedMemoryGiBSeconds: 180},
		},
		"a Pod restarting while running is not a wake": {
			obs: []obs{{0, StateRunning}, {60, StatePending}, {70, StateRunning}, {80, StateSuspended}, {90, StatePending}, {100, StateRunning}}, end: 100,
			want: Figures{RunningSeconds: 70, SuspendedSeconds: 10, Wakes: 1,
				RequestedCPUCoreSeconds: 35, RequestedMemoryGiBSeconds: 140},
		},
		"repeated observation of same state is idempotent": {
			obs: []obs{{0, StateRunning}, {30, StateRunning}, {30, StateRunning}}, end: 60,
			want: Figures{RunningSeconds: 60, RequestedCPUCoreSeconds: 30, RequestedMemoryGiBSeconds: 120},
		},
		"clock going backwards never makes negative time": {
			obs: []obs{{100, StateRunning}, {50, StateSuspended}}, end: 40,
			want: Figures{},
		},
		"pending to running is not a wake": {
			obs: []obs{{0, StatePending}, {5, StateRunning}, {10, StatePending}, {20, StateRunning}}, end: 20,
			want: Figures{RunningSeconds: 5, RequestedCPUCoreSeconds: 2.5, RequestedMemoryGiBSeconds: 10},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewMeter(req)
			for _, o := range tc.obs {
				m.Observe(at(o.sec), o.state)
			}
			if diff := cmp.Diff(tc.want, m.Figures(at(tc.end))); diff != "" {
				t.Errorf("Figures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s}
	}
	cases := map[string]struct {
		conds []metav1.Condition
		want  State
	}{
		"no conditions":                     {want: StatePending},
		"ready":                             {conds: []metav1.Condition{cond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionTrue)}, want: StateRunning},
		"suspended":                         {conds: []metav1.Condition{cond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse), cond(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionTrue)}, want: StateSuspended},
		"not ready":                         {conds: []metav1.Condition{cond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionFalse)}, want: StatePending},
		"suspended wins over a stale ready": {conds: []metav1.Condition{cond(sandboxv1beta1.SandboxConditionReady, metav1.ConditionTrue), cond(sandboxv1beta1.SandboxConditionSuspended, metav1.ConditionTrue)}, want: StateSuspended},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := &sandboxv1beta1.Sandbox{Status: sandboxv1beta1.SandboxStatus{Conditions: tc.conds}}
			if got := StateOf(sb); got != tc.want {
				t.Errorf("StateOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequestsOf(t *testing.T) {
	ctr := func(cpu, mem string) corev1.Container {
		rl := corev1.ResourceList{}
		if cpu != "" {
			rl[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			rl[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: rl}}
	}
	cases := map[string]struct {
		spec corev1.PodSpec
		want Requests
	}{
		"none": {want: Requests{}},
		"sum of containers": {spec: corev1.PodSpec{Containers: []corev1.Container{ctr("250m", "1Gi"), ctr("1", "512Mi")}},
			want: Requests{CPUMilli: 1250, MemoryBytes: 1<<30 + 512<<20}},
		"init container larger than the sum wins": {spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr("4", "")},
			Containers:     []corev1.Container{ctr("1", "1Gi")}},
			want: Requests{CPUMilli: 4000, MemoryBytes: 1 << 30}},
		"pod overhead is added": {spec: corev1.PodSpec{
			Containers: []corev1.Container{ctr("1", "1Gi")},
			Overhead:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			want: Requests{CPUMilli: 1100, MemoryBytes: 1 << 30}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RequestsOf(&tc.spec)); diff != "" {
				t.Errorf("RequestsOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordJSONIsStable(t *testing.T) {
	r := Record{
		Schema: SchemaVersion, Namespace: "team-a", Name: "sb", UID: "u-1",
		Claim: "c", Template: "tpl", Pool: "p", Principal: "alice",
		Start: t0, End: at(100),
		Figures: Figures{RunningSeconds: 100, RequestedCPUCoreSeconds: 50},
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":"kubox.dev/usage/v1","namespace":"team-a","name":"sb","uid":"u-1","claim":"c","template":"tpl","pool":"p","principal":"alice","start":"2026-12-07T12:00:00Z","end":"2026-12-07T12:01:40Z","runningSeconds":100,"suspendedSeconds":0,"wakes":0,"requestedCpuCoreSeconds":50,"requestedMemoryGiBSeconds":0,"measured":null}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}
