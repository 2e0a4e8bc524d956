package sandboxclaim

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// latencyClaims is how many claims of each kind TestWarmClaimsKeepTheirOwnSettings makes.
const latencyClaims = 10

// TestWarmClaimsKeepTheirOwnSettings checks, over many warm claims in a row, that each gets a
// pool member of its own and sees its own variable, never another claim's. It logs, for
// comparison and not as a limit, the claims' create-to-Ready latencies (seen by a watch) with and
// without settings: the settings add one agent call to the critical path.
func TestWarmClaimsKeepTheirOwnSettings(t *testing.T) {
	e := startWithAgents(t)
	env.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: e.ns}, Data: map[string][]byte{"token": []byte("s3cr3t")}})
	env.Create(t, settingsTemplate("python", e.ns, e.port))
	env.Create(t, testutil.MakePool("pool", e.ns, "python").Replicas(2*latencyClaims).Obj())
	waitForPoolReady(t, e.ns, "pool", 2*latencyClaims)
	ready := watchReady(t, e.ns)

	measure := func(prefix string, settings bool) []time.Duration {
		var out []time.Duration
		for i := range latencyClaims {
			name := fmt.Sprintf("%s-%d", prefix, i)
			claim := testutil.MakeClaim(name, e.ns).WarmPool("pool").Obj()
			if settings {
				claim = makeClaimWithSettings(name, e.ns, "TOKEN", name, extv1beta1.SecretFile{SecretName: "api", MountPath: settingsDir})
				claim.Spec.Env = append(claim.Spec.Env, extv1beta1.EnvVar{Name: "SECOND", Value: "2"})
			}
			start := time.Now()
			env.Create(t, claim)
			out = append(out, ready(name).Sub(start))
		}
		return out
	}
	plain, withSettings := measure("plain", false), measure("settings", true)

	seen := map[string]string{}
	for i := range latencyClaims {
		name := fmt.Sprintf("settings-%d", i)
		sb := framework.Read[sandboxv1beta1.Sandbox](t, env, e.ns, framework.Read[extv1beta1.SandboxClaim](t, env, e.ns, name).Status.Sandbox.Name)
		if other, taken := seen[sb.Name]; taken {
			t.Errorf("claims %s and %s share Sandbox %s", other, name, sb.Name)
		}
		seen[sb.Name] = name
		if sb.Labels[sandboxv1beta1.LaunchTypeLabel] != extv1beta1.LaunchTypeWarm {
			t.Errorf("claim %s started cold", name)
		}
		if got := e.printenv(t, sb, "TOKEN"); got != name+"\n" {
			t.Errorf("claim %s's process: TOKEN = %q, want its own %q", name, got, name+"\n")
		}
	}
	t.Logf("Create to Ready, %d warm claims in a row each: plain p50 %v p99 %v; with 2 env vars and 1 secret file p50 %v p99 %v",
		latencyClaims, percentile(plain, 50), percentile(plain, 99), percentile(withSettings, 50), percentile(withSettings, 99))
}

// watchReady follows the claims of ns with a watch and returns a function that waits until the
// claim called name is Ready and returns when the watch first saw it so.
func watchReady(t *testing.T, ns string) func(name string) time.Time {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(t.Context(), &extv1beta1.SandboxClaimList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	at := map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			claim, ok := ev.Object.(*extv1beta1.SandboxClaim)
			if !ok || !meta.IsStatusConditionTrue(claim.Status.Conditions, extv1beta1.ClaimConditionReady) {
				continue
			}
			mu.Lock()
			if _, seen := at[claim.Name]; !seen {
				at[claim.Name] = time.Now()
			}
			mu.Unlock()
		}
	}()
	return func(name string) time.Time {
		var got time.Time
		framework.WaitFor(t, burstTimeout, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			got = at[name]
			return !got.IsZero(), "claim " + name + " is not Ready"
		})
		return got
	}
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(100 * time.Microsecond)
}
