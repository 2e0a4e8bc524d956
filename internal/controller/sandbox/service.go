package sandbox

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// reconcileService implements spec.service: true keeps a headless Service named like the
// Sandbox, false deletes the one it owns, unset keeps an owned one without creating one.
func (r *Reconciler) reconcileService(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	if obs.ownedPods > 1 {
		return nil
	}
	svc := &corev1.Service{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(sb), svc)
	switch {
	case apierrors.IsNotFound(err):
		svc = nil
	case err != nil:
		return fmt.Errorf("reading Service %s: %w", sb.Name, err)
	case !owns(sb, svc):
		svc = nil // a labelled Service we do not control: adoption is decided below
	}
	want := sb.Spec.Service
	switch {
	case want == nil:
		obs.service = svc
		return nil
	case !*want:
		if svc != nil {
			return client.IgnoreNotFound(r.client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID}))
		}
		return nil
	case svc == nil:
		return r.createService(ctx, sb, obs)
	}
	obs.service = svc
	return r.patchService(ctx, sb, svc)
}

func (r *Reconciler) createService(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	svc, err := r.buildService(sb)
	if err != nil {
		return err
	}
	err = r.client.Create(ctx, svc, client.FieldOwner(FieldManager))
	switch {
	case err == nil:
		obs.service = svc
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating Service %s: %w", sb.Name, err)
	}
	existing := &corev1.Service{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(svc), existing); err != nil {
		return fmt.Errorf("reading existing Service %s: %w", sb.Name, err)
	}
	if existing.Spec.ClusterIP != corev1.ClusterIPNone {
		return fmt.Errorf("service %s already exists and is not headless (clusterIP %q); delete it so the Sandbox can create its own",
			sb.Name, existing.Spec.ClusterIP)
	}
	if err := r.adopt(ctx, sb, existing, obs); err != nil {
		return err
	}
	obs.service = existing
	return r.patchService(ctx, sb, existing)
}

// patchService repairs drift of the managed parts of an owned Service: labels, selector, ports.
func (r *Reconciler) patchService(ctx context.Context, sb *sandboxv1beta1.Sandbox, svc *corev1.Service) error {
	want, err := r.buildService(sb)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(svc.Spec.Selector, want.Spec.Selector) &&
		equality.Semantic.DeepEqual(svc.Spec.Ports, want.Spec.Ports) &&
		hasAll(svc.Labels, want.Labels) {
		return nil
	}
	base := svc.DeepCopy()
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		svc.Labels[k] = v
	}
	svc.Spec.Selector, svc.Spec.Ports = want.Spec.Selector, want.Spec.Ports
	if err := r.client.Patch(ctx, svc, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("updating Service %s: %w", svc.Name, err)
	}
	return nil
}

func (r *Reconciler) buildService(sb *sandboxv1beta1.Sandbox) (*corev1.Service, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: sb.Name, Namespace: sb.Namespace, Labels: map[string]string{
			sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(sb.Name),
		}},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{sandboxv1beta1.SandboxNameLabel: sb.Name},
			Ports:     servicePorts(&sb.Spec.PodTemplate.Spec),
		},
	}
	if err := controllerutil.SetControllerReference(sb, svc, r.scheme); err != nil {
		return nil, fmt.Errorf("setting the owner of Service %s: %w", sb.Name, err)
	}
	return svc, nil
}

// servicePorts derives the Service's ports from the container ports of every container and then
// every restartable init container (sidecar), deduplicated by port and protocol. The first
// explicit name wins, unless another port already has it; unnamed ports are called
// p-<port>-<protocol>, suffixed on a collision.
func servicePorts(spec *corev1.PodSpec) []corev1.ServicePort {
	type key struct {
		port  int32
		proto corev1.Protocol
	}
	containers := append([]corev1.Container(nil), spec.Containers...)
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	seen := map[key]int{}
	named := map[string]bool{}
	var ports []corev1.ServicePort
	for _, c := range containers {
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			name := p.Name
			if named[name] {
				name = "" // Service port names must be unique: this one gets a generated name
			}
			k := key{p.ContainerPort, proto}
			if i, ok := seen[k]; ok {
				if ports[i].Name == "" && name != "" {
					ports[i].Name, named[name] = name, true
				}
				continue
			}
			if name != "" {
				named[name] = true
			}
			seen[k] = len(ports)
			ports = append(ports, corev1.ServicePort{Name: name, Port: p.ContainerPort, Protocol: proto,
				TargetPort: intstr.FromInt32(p.ContainerPort)})
		}
	}
	nameUnnamed(ports)
	sort.Slice(ports, func(i, j int) bool {
		if ports[i].Port != ports[j].Port {
			return ports[i].Port < ports[j].Port
		}
		return ports[i].Protocol < ports[j].Protocol
	})
	return ports
}

func nameUnnamed(ports []corev1.ServicePort) {
	used := map[string]bool{}
	for _, p := range ports {
		used[p.Name] = p.Name != ""
	}
	for i := range ports {
		if ports[i].Name != "" {
			continue
		}
		base := fmt.Sprintf("p-%d-%s", ports[i].Port, strings.ToLower(string(ports[i].Protocol)))
		name := base
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		used[name] = true
		ports[i].Name = name
	}
}

func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
