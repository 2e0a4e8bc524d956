package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Messages of the SandboxWarmPool CRD's CEL rules.
const (
	msgPoolName            = "metadata.name must be a DNS-1035 label of at most 63 characters"
	msgPoolTemplateRefName = "sandboxTemplateRef.name must be a SandboxTemplate name"
	msgRollingUpdateType   = "updateStrategy.rollingUpdate may be set only when updateStrategy.type is RollingUpdate"
	msgBothZero            = "updateStrategy.rollingUpdate.maxSurge and maxUnavailable must not both be zero"
	msgMaxSurge            = "updateStrategy.rollingUpdate.maxSurge must be a non-negative number or a percentage"
	msgMaxUnavailable      = "updateStrategy.rollingUpdate.maxUnavailable must be a non-negative number or a percentage from 0% to 100%"
)

// agentSandboxPoolManifest is a SandboxWarmPool as agent-sandbox's documentation writes one.
const agentSandboxPoolManifest = `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: python-sandbox-warmpool
spec:
  replicas: 2
  sandboxTemplateRef:
    name: python-runtime-template
`

func intOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestSandboxWarmPoolDefaults(t *testing.T) {
	ns := env.NewNamespace(t)
	defaultSurge, defaultUnavailable := intstr.FromString(extv1beta1.DefaultMaxSurge), intstr.FromString(extv1beta1.DefaultMaxUnavailable)
	cases := map[string]struct {
		pool *testutil.PoolWrapper
		want extv1beta1.SandboxWarmPoolSpec
	}{
		"unset fields": {
			pool: testutil.MakePool("unset", ns, "template"),
			want: extv1beta1.SandboxWarmPoolSpec{
				Replicas:                ptr.To(extv1beta1.DefaultWarmPoolReplicas),
				SandboxTemplateRef:      extv1beta1.SandboxTemplateReference{Name: "template"},
				UpdateStrategy:          extv1beta1.WarmPoolUpdateStrategy{Type: extv1beta1.WarmPoolUpdateStrategyOnReplenish},
				ProgressDeadlineSeconds: ptr.To(extv1beta1.DefaultProgressDeadlineSeconds),
			},
		},
		"zero replicas are kept": {
			pool: testutil.MakePool("cold", ns, "template").Replicas(0),
			want: extv1beta1.SandboxWarmPoolSpec{
				Replicas:                ptr.To[int32](0),
				SandboxTemplateRef:      extv1beta1.SandboxTemplateReference{Name: "template"},
				UpdateStrategy:          extv1beta1.WarmPoolUpdateStrategy{Type: extv1beta1.WarmPoolUpdateStrategyOnReplenish},
				ProgressDeadlineSeconds: ptr.To(extv1beta1.DefaultProgressDeadlineSeconds),
			},
		},
		"empty rolling update": {
			pool: testutil.MakePool("rolling", ns, "template").RollingUpdate(nil, nil),
			want: extv1beta1.SandboxWarmPoolSpec{
				Replicas:           ptr.To(extv1beta1.DefaultWarmPoolReplicas),
				SandboxTemplateRef: extv1beta1.SandboxTemplateReference{Name: "template"},
				UpdateStrategy: extv1beta1.WarmPoolUpdateStrategy{
					Type:          extv1beta1.WarmPoolUpdateStrategyRollingUpdate,
					RollingUpdate: &extv1beta1.RollingUpdateWarmPool{MaxSurge: &defaultSurge, MaxUnavailable: &defaultUnavailable},
				},
				ProgressDeadlineSeconds: ptr.To(extv1beta1.DefaultProgressDeadlineSeconds),
			},
		},
		"set fields are kept": {
			pool: testutil.MakePool("set", ns, "template").Replicas(7).ProgressDeadlineSeconds(30).
				RollingUpdate(intOrString(intstr.FromInt32(2)), intOrString(intstr.FromString("50%"))),
			want: extv1beta1.SandboxWarmPoolSpec{
				Replicas:           ptr.To[int32](7),
				SandboxTemplateRef: extv1beta1.SandboxTemplateReference{Name: "template"},
				UpdateStrategy: extv1beta1.WarmPoolUpdateStrategy{
					Type: extv1beta1.WarmPoolUpdateStrategyRollingUpdate,
					RollingUpdate: &extv1beta1.RollingUpdateWarmPool{
						MaxSurge: intOrString(intstr.FromInt32(2)), MaxUnavailable: intOrString(intstr.FromString("50%")),
					},
				},
				ProgressDeadlineSeconds: ptr.To[int32](30),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			pool := tc.pool.Obj()
			if err := env.Client.Create(ctx, pool); err != nil {
				t.Fatalf("Creating pool: %v", err)
			}
			got := &extv1beta1.SandboxWarmPool{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pool), got); err != nil {
				t.Fatalf("Reading pool back: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("Spec as stored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentSandboxWarmPoolManifest(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	if err := env.Client.Create(ctx, fromYAML(t, ns, agentSandboxPoolManifest)); err != nil {
		t.Fatalf("Creating agent-sandbox's SandboxWarmPool: %v", err)
	}
	got := &extv1beta1.SandboxWarmPool{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "python-sandbox-warmpool"}, got); err != nil {
		t.Fatalf("Reading it back: %v", err)
	}
	want := extv1beta1.SandboxWarmPoolSpec{
		Replicas:                ptr.To[int32](2),
		SandboxTemplateRef:      extv1beta1.SandboxTemplateReference{Name: "python-runtime-template"},
		UpdateStrategy:          extv1beta1.WarmPoolUpdateStrategy{Type: extv1beta1.WarmPoolUpdateStrategyOnReplenish},
		ProgressDeadlineSeconds: ptr.To(extv1beta1.DefaultProgressDeadlineSeconds),
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("Spec (-want +got):\n%s", diff)
	}
}

func TestSandboxWarmPoolCreateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	rolling := func(name string, surge, unavailable intstr.IntOrString) client.Object {
		return testutil.MakePool(name, ns, "template").RollingUpdate(&surge, &unavailable).Obj()
	}
	cases := map[string]struct {
		obj      client.Object
		wantErrs []string // empty: the object is accepted
	}{
		"name of 63 characters": {
			obj: testutil.MakePool("p"+strings.Repeat("a", 62), ns, "template").Obj(),
		},
		"name of 64 characters": {
			obj:      testutil.MakePool("p"+strings.Repeat("a", 63), ns, "template").Obj(),
			wantErrs: []string{msgPoolName},
		},
		"name starting with a digit": {
			obj:      testutil.MakePool("1pool", ns, "template").Obj(),
			wantErrs: []string{msgPoolName},
		},
		"name with a dot": {
			obj:      testutil.MakePool("warm.pool", ns, "template").Obj(),
			wantErrs: []string{msgPoolName},
		},
		"negative replicas": {
			obj:      testutil.MakePool("negative", ns, "template").Replicas(-1).Obj(),
			wantErrs: []string{"spec.replicas", "greater than or equal to 0"},
		},
		"template name with dots": {
			obj: testutil.MakePool("dotted-template", ns, "python.v2").Obj(),
		},
		"empty template name": {
			obj:      testutil.MakePool("empty-template", ns, "").Obj(),
			wantErrs: []string{"spec.sandboxTemplateRef.name", msgPoolTemplateRefName},
		},
		"template name with uppercase letters": {
			obj:      testutil.MakePool("upper-template", ns, "Python").Obj(),
			wantErrs: []string{"spec.sandboxTemplateRef.name", msgPoolTemplateRefName},
		},
		"no sandboxTemplateRef": {
			obj: fromYAML(t, ns, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: no-template
spec:
  replicas: 1
`),
			wantErrs: []string{"spec.sandboxTemplateRef: Required value"},
		},
		"Recreate": {
			obj: testutil.MakePool("recreate", ns, "template").Strategy(extv1beta1.WarmPoolUpdateStrategyRecreate).Obj(),
		},
		"unknown update strategy": {
			obj:      testutil.MakePool("surge", ns, "template").Strategy("Surge").Obj(),
			wantErrs: []string{"spec.updateStrategy.type", `Unsupported value: "Surge"`},
		},
		"rollingUpdate with type Recreate": {
			obj: func() client.Object {
				w := testutil.MakePool("recreate-rolling", ns, "template").RollingUpdate(nil, nil)
				w.Spec.UpdateStrategy.Type = extv1beta1.WarmPoolUpdateStrategyRecreate
				return w.Obj()
			}(),
			wantErrs: []string{"spec.updateStrategy", msgRollingUpdateType},
		},
		"rollingUpdate without a type": {
			obj: func() client.Object {
				w := testutil.MakePool("untyped-rolling", ns, "template").RollingUpdate(nil, nil)
				w.Spec.UpdateStrategy.Type = ""
				return w.Obj()
			}(),
			wantErrs: []string{"spec.updateStrategy", msgRollingUpdateType},
		},
		"maxSurge 0 and maxUnavailable 1": {
			obj: rolling("surge-0", intstr.FromInt32(0), intstr.FromInt32(1)),
		},
		"maxSurge 100% and maxUnavailable 0%": {
			obj: rolling("surge-100", intstr.FromString("100%"), intstr.FromString("0%")),
		},
		"maxSurge 250%": {
			obj: rolling("surge-250", intstr.FromString("250%"), intstr.FromInt32(0)),
		},
		"maxUnavailable 100%": {
			obj: rolling("unavailable-100", intstr.FromInt32(0), intstr.FromString("100%")),
		},
		"maxSurge and maxUnavailable 0": {
			obj:      rolling("both-0", intstr.FromInt32(0), intstr.FromInt32(0)),
			wantErrs: []string{"spec.updateStrategy.rollingUpdate", msgBothZero},
		},
		"maxSurge 0% and maxUnavailable 0": {
			obj:      rolling("both-0-percent", intstr.FromString("0%"), intstr.FromInt32(0)),
			wantErrs: []string{"spec.updateStrategy.rollingUpdate", msgBothZero},
		},
		"negative maxSurge": {
			obj:      rolling("surge-negative", intstr.FromInt32(-1), intstr.FromInt32(1)),
			wantErrs: []string{"spec.updateStrategy.rollingUpdate.maxSurge", msgMaxSurge},
		},
		"maxSurge not a percentage": {
			obj:      rolling("surge-word", intstr.FromString("some"), intstr.FromInt32(1)),
			wantErrs: []string{"spec.updateStrategy.rollingUpdate.maxSurge", msgMaxSurge},
		},
		"negative maxUnavailable": {
			obj:      rolling("unavailable-negative", intstr.FromInt32(1), intstr.FromInt32(-1)),
			wantErrs: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable", msgMaxUnavailable},
		},
		"maxUnavailable 101%": {
			obj:      rolling("unavailable-101", intstr.FromInt32(1), intstr.FromString("101%")),
			wantErrs: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable", msgMaxUnavailable},
		},
		"maxUnavailable as a bare number string": {
			obj:      rolling("unavailable-string", intstr.FromInt32(1), intstr.FromString("1")),
			wantErrs: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable", msgMaxUnavailable},
		},
		"progressDeadlineSeconds 0": {
			obj:      testutil.MakePool("deadline-0", ns, "template").ProgressDeadlineSeconds(0).Obj(),
			wantErrs: []string{"spec.progressDeadlineSeconds", "greater than or equal to 1"},
		},
		"readinessGracePeriodSeconds below 30": {
			obj:      testutil.MakePool("grace-29", ns, "template").ReadinessGracePeriodSeconds(29).Obj(),
			wantErrs: []string{"spec.readinessGracePeriodSeconds", "greater than or equal to 30"},
		},
		"readinessGracePeriodSeconds 30": {
			obj: testutil.MakePool("grace-30", ns, "template").ReadinessGracePeriodSeconds(30).Obj(),
		},
		"agent-sandbox's manifest": {
			obj: fromYAML(t, ns, agentSandboxPoolManifest),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := env.Client.Create(t.Context(), tc.obj)
			checkErr(t, "Creating pool "+tc.obj.GetName(), err, tc.wantErrs)
		})
	}
}

func TestSandboxWarmPoolUpdateValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := map[string]struct {
		pool     *testutil.PoolWrapper
		update   func(*extv1beta1.SandboxWarmPool)
		wantErrs []string // empty: the update is accepted
	}{
		"switching to another template and strategy": {
			pool: testutil.MakePool("switch", ns, "template"),
			update: func(p *extv1beta1.SandboxWarmPool) {
				p.Spec.SandboxTemplateRef.Name = "other"
				p.Spec.UpdateStrategy.Type = extv1beta1.WarmPoolUpdateStrategyRecreate
			},
		},
		"leaving RollingUpdate but keeping its bounds": {
			pool: testutil.MakePool("leave-rolling", ns, "template").RollingUpdate(nil, nil),
			update: func(p *extv1beta1.SandboxWarmPool) {
				p.Spec.UpdateStrategy.Type = extv1beta1.WarmPoolUpdateStrategyOnReplenish
			},
			wantErrs: []string{msgRollingUpdateType},
		},
		"leaving RollingUpdate": {
			pool: testutil.MakePool("leave-rolling-clean", ns, "template").RollingUpdate(nil, nil),
			update: func(p *extv1beta1.SandboxWarmPool) {
				p.Spec.UpdateStrategy = extv1beta1.WarmPoolUpdateStrategy{Type: extv1beta1.WarmPoolUpdateStrategyOnReplenish}
			},
		},
		"negative replicas": {
			pool:     testutil.MakePool("negative-update", ns, "template"),
			update:   func(p *extv1beta1.SandboxWarmPool) { p.Spec.Replicas = ptr.To[int32](-3) },
			wantErrs: []string{"spec.replicas"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			pool := tc.pool.Obj()
			if err := env.Client.Create(ctx, pool); err != nil {
				t.Fatalf("Creating pool: %v", err)
			}
			tc.update(pool)
			checkErr(t, "Updating pool", env.Client.Update(ctx, pool), tc.wantErrs)
		})
	}
}

func TestSandboxWarmPoolStatusValidation(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := t.Context()
	pool := testutil.MakePool("status", ns, "template").Obj()
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatalf("Creating pool: %v", err)
	}
	cases := map[string]struct {
		status   extv1beta1.SandboxWarmPoolStatus
		wantErrs []string
	}{
		"counts and selector": {
			status: extv1beta1.SandboxWarmPoolStatus{
				Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, ObservedGeneration: 1,
				Selector: extv1beta1.WarmPoolSelector("status"),
			},
		},
		"negative readyReplicas": {
			status:   extv1beta1.SandboxWarmPoolStatus{ReadyReplicas: -1},
			wantErrs: []string{"status.readyReplicas"},
		},
		"negative updatedReplicas": {
			status:   extv1beta1.SandboxWarmPoolStatus{UpdatedReplicas: -1},
			wantErrs: []string{"status.updatedReplicas"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &extv1beta1.SandboxWarmPool{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pool), p); err != nil {
				t.Fatalf("Reading pool: %v", err)
			}
			p.Status = tc.status
			checkErr(t, "Writing pool status", env.Client.Status().Update(ctx, p), tc.wantErrs)
		})
	}
}
