package ui

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// now is the dashboard's clock (a variable for tests).
var now = time.Now

// overview is what the dashboard's front page shows of a namespace.
type overview struct {
	Pools     []poolRow    `json:"pools"`
	Claims    []claimRow   `json:"claims"`
	Sandboxes []sandboxRow `json:"sandboxes"`
	// Denied says which lists the API server refused the viewer (RBAC), and why.
	Denied []string `json:"denied,omitempty"`
}

// poolRow is a SandboxWarmPool: its ready members of the wanted ones, and its Progressing
// condition (the refill).
type poolRow struct {
	Name     string    `json:"name"`
	Template string    `json:"template"`
	Wanted   int32     `json:"wanted"`
	Total    int32     `json:"total"`
	Ready    int32     `json:"ready"`
	Progress string    `json:"progress,omitempty"`
	Created  time.Time `json:"created"`
}

// claimRow is a SandboxClaim: its state and its sandbox.
type claimRow struct {
	Name    string    `json:"name"`
	Sandbox string    `json:"sandbox,omitempty"`
	State   string    `json:"state"`
	Message string    `json:"message,omitempty"`
	Created time.Time `json:"created"`
}

// sandboxRow is a Sandbox: its state, age, idle time and owner.
type sandboxRow struct {
	Name    string    `json:"name"`
	State   string    `json:"state"`
	Message string    `json:"message,omitempty"`
	Created time.Time `json:"created"`
	// Owner is its controller: "SandboxClaim/x", "SandboxWarmPool/y", or "" (created directly).
	Owner string `json:"owner,omitempty"`
	// LastActive is the last activity kubox recorded (status.idle, else the router's
	// annotation); IdleReason why it is or is not idle.
	LastActive   *time.Time `json:"lastActive,omitempty"`
	IdleReason   string     `json:"idleReason,omitempty"`
	ShutdownTime *time.Time `json:"shutdownTime,omitempty"`
	Suspended    bool       `json:"suspended"`
}

// loadOverview lists ns's pools, claims and sandboxes as the viewer.
func (h *Handler) loadOverview(ctx context.Context, ns string) (*overview, error) {
	o := &overview{Pools: []poolRow{}, Claims: []claimRow{}, Sandboxes: []sandboxRow{}}
	pools, claims, sandboxes := &extv1beta1.SandboxWarmPoolList{}, &extv1beta1.SandboxClaimList{}, &sandboxv1beta1.SandboxList{}
	for _, l := range []client.ObjectList{pools, claims, sandboxes} {
		if err := h.kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			if herr := kubeError(err, ""); herr.Code != 403 {
				return nil, err
			}
			o.Denied = append(o.Denied, err.Error())
		}
	}
	for i := range pools.Items {
		o.Pools = append(o.Pools, poolView(&pools.Items[i]))
	}
	for i := range claims.Items {
		o.Claims = append(o.Claims, claimView(&claims.Items[i]))
	}
	for i := range sandboxes.Items {
		o.Sandboxes = append(o.Sandboxes, sandboxView(&sandboxes.Items[i]))
	}
	slices.SortFunc(o.Sandboxes, func(a, b sandboxRow) int { return b.Created.Compare(a.Created) })
	return o, nil
}

func poolView(p *extv1beta1.SandboxWarmPool) poolRow {
	row := poolRow{Name: p.Name, Template: p.Spec.SandboxTemplateRef.Name, Total: p.Status.Replicas,
		Ready: p.Status.ReadyReplicas, Created: p.CreationTimestamp.Time}
	if p.Spec.Replicas != nil {
		row.Wanted = *p.Spec.Replicas
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, extv1beta1.WarmPoolConditionProgressing); c != nil {
		row.Progress = c.Reason
		if c.Message != "" {
			row.Progress += ": " + c.Message
		}
	}
	return row
}

func claimView(c *extv1beta1.SandboxClaim) claimRow {
	row := claimRow{Name: c.Name, Sandbox: c.Status.Sandbox.Name, State: "Pending", Created: c.CreationTimestamp.Time}
	if r := meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionReady); r != nil {
		row.State, row.Message = conditionState(r), r.Message
	}
	if c.DeletionTimestamp != nil {
		row.State = "Deleting"
	}
	return row
}

// sandboxView computes a sandbox's row from what its object says.
func sandboxView(sb *sandboxv1beta1.Sandbox) sandboxRow {
	row := sandboxRow{Name: sb.Name, State: "Pending", Created: sb.CreationTimestamp.Time,
		Suspended: sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended}
	ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	if ready != nil {
		row.State, row.Message = conditionState(ready), ready.Message
	}
	switch {
	case sb.DeletionTimestamp != nil:
		row.State = "Deleting"
	case row.Suspended && row.State == "Ready":
		row.State = "Suspending"
	case row.Suspended:
		row.State = "Suspended"
	}
	if o := metav1.GetControllerOf(sb); o != nil {
		row.Owner = o.Kind + "/" + o.Name
	}
	row.LastActive, row.IdleReason = lastActive(sb)
	if t := sb.Spec.ShutdownTime; t != nil {
		row.ShutdownTime = &t.Time
	}
	return row
}

// conditionState is "Ready" for a True condition, else its reason.
func conditionState(c *metav1.Condition) string {
	if c.Status == metav1.ConditionTrue {
		return "Ready"
	}
	if c.Reason == "" {
		return "NotReady"
	}
	return c.Reason
}

// lastActive is when kubox last saw the sandbox active: the controller's status.idle, else the
// router's last-activity annotation (a sandbox with an idle policy has one of them).
func lastActive(sb *sandboxv1beta1.Sandbox) (*time.Time, string) {
	var at *time.Time
	reason := ""
	if idle := sb.Status.Idle; idle != nil {
		reason = idle.Reason
		if idle.LastActiveTime != nil {
			at = &idle.LastActiveTime.Time
		}
	}
	if a, err := time.Parse(time.RFC3339Nano, sb.Annotations[sandboxv1beta1.LastActivityAnnotation]); err == nil && (at == nil || a.After(*at)) {
		at = &a
	}
	return at, reason
}

// detail is one sandbox's page.
type detail struct {
	Sandbox    sandboxRow         `json:"sandbox"`
	Conditions []metav1.Condition `json:"conditions"`
	Events     []eventRow         `json:"events"`
	// Claim is the claim that owns the sandbox, whose shutdownTime bounds it.
	Claim string `json:"claim,omitempty"`
	// Can says which actions RBAC allows the viewer (SelfSubjectAccessReviews).
	Can    actions  `json:"can"`
	Denied []string `json:"denied,omitempty"`
}

// eventRow is an Event about the sandbox or its Pod.
type eventRow struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Object  string    `json:"object"`
	Count   int32     `json:"count"`
	Last    time.Time `json:"last"`
}

// loadDetail reads sandbox ns/name, its Events and what the viewer may do with it.
func (h *Handler) loadDetail(ctx context.Context, ns, name string) (*detail, error) {
	sb := &sandboxv1beta1.Sandbox{}
	if err := h.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
		return nil, err
	}
	d := &detail{Sandbox: sandboxView(sb), Conditions: sb.Status.Conditions, Events: []eventRow{}}
	if d.Conditions == nil {
		d.Conditions = []metav1.Condition{}
	}
	if o := metav1.GetControllerOf(sb); o != nil && o.Kind == "SandboxClaim" {
		d.Claim = o.Name
	}
	events := &corev1.EventList{}
	if err := h.kube.List(ctx, events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": name}); err != nil {
		d.Denied = append(d.Denied, err.Error())
	}
	for _, e := range events.Items {
		d.Events = append(d.Events, eventView(&e))
	}
	slices.SortFunc(d.Events, func(a, b eventRow) int { return b.Last.Compare(a.Last) })
	can, err := h.allowed(ctx, ns, name, d.Claim)
	if err != nil {
		return nil, err
	}
	d.Can = can
	return d, nil
}

func eventView(e *corev1.Event) eventRow {
	last := e.LastTimestamp.Time
	if last.IsZero() {
		last = e.EventTime.Time
	}
	if last.IsZero() {
		last = e.CreationTimestamp.Time
	}
	return eventRow{Type: e.Type, Reason: e.Reason, Message: strings.TrimSpace(e.Message),
		Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, Count: max(e.Count, 1), Last: last}
}
