// Package sandboxes tells kubox-egress which sandbox a connection comes from and what that
// sandbox may reach: an informer cache maps a Pod IP to the Pod of a sandbox, the Pod to the
// Sandbox that controls it, and the Sandbox's spec.egress (its effective policy, the template's
// narrowed by its claim) to an egress.Policy, with credential values read from Secrets and the
// sandbox's egress CA loaded from the Secret kubox-controller made for it.
package sandboxes

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/egress"
	"github.com/kubox-dev/kubox/internal/provenance"
)

// podIPField indexes the Pods of sandboxes by each of their IPs.
const podIPField = "kubox.egress.podIP"

// Config configures a Source.
type Config struct {
	// Namespace limits the Source to one namespace; empty: all.
	Namespace string
	// SecretTTL is how long a credential read from a Secret is used before it is read again,
	// so a rotated key reaches the proxy within it. Default 30s.
	SecretTTL time.Duration
	// Log gets the problems of building a sandbox's policy (a missing Secret).
	Log *slog.Logger
}

// Source is the policy source of the proxy (egress.Config.Identify).
type Source struct {
	cfg    Config
	cache  crcache.Cache
	reader client.Reader // Secrets, read on demand: the proxy never lists or watches them

	mu    sync.Mutex
	built map[types.UID]*entry
}

// entry is a sandbox's proxy view, built from one version of the Sandbox.
type entry struct {
	version string
	at      time.Time
	sb      *egress.Sandbox
	ca      *egress.CA // kept across versions: the Pod trusts the CA it started with
}

// New returns a Source reading the cluster at restConfig; Start runs it.
func New(restConfig *rest.Config, cfg Config) (*Source, error) {
	if cfg.SecretTTL <= 0 {
		cfg.SecretTTL = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	scheme := k8sruntime.NewScheme()
	utilruntime.Must(sandboxv1beta1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	hasSandbox, err := labels.NewRequirement(sandboxv1beta1.SandboxNameLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	opts := crcache.Options{Scheme: scheme, ByObject: map[client.Object]crcache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasSandbox), Transform: trimPod},
	}}
	if cfg.Namespace != "" {
		opts.DefaultNamespaces = map[string]crcache.Config{cfg.Namespace: {}}
	}
	c, err := crcache.New(restConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the informer cache of Pods and Sandboxes: %w", err)
	}
	if err := c.IndexField(context.Background(), &corev1.Pod{}, podIPField, podIPs); err != nil {
		return nil, fmt.Errorf("indexing Pods by IP: %w", err)
	}
	inf, err := c.GetInformer(context.Background(), &sandboxv1beta1.Sandbox{})
	if err != nil {
		return nil, fmt.Errorf("watching Sandboxes: %w", err)
	}
	reader, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, cache: c, reader: reader, built: map[types.UID]*entry{}}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: s.forget}); err != nil {
		return nil, err
	}
	return s, nil
}

// forget drops a deleted Sandbox's view (its credentials and CA key) from memory.
func (s *Source) forget(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if sb, ok := obj.(*sandboxv1beta1.Sandbox); ok {
		s.mu.Lock()
		delete(s.built, sb.UID)
		s.mu.Unlock()
	}
}

// Start runs the informers until ctx ends.
func (s *Source) Start(ctx context.Context) error { return s.cache.Start(ctx) }

// WaitForSync waits until the informers hold the cluster's Pods and Sandboxes.
func (s *Source) WaitForSync(ctx context.Context) bool { return s.cache.WaitForCacheSync(ctx) }

// Identify returns the sandbox whose one live Pod has the address src, if that sandbox has an
// egress policy, or why src names none.
func (s *Source) Identify(src netip.Addr) (*egress.Sandbox, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sb, err := s.sandboxAt(ctx, egress.CanonicalAddr(src))
	if err != nil {
		return nil, err
	}
	if sb.Spec.Egress == nil {
		return nil, egress.UnknownSource(src)
	}
	return s.view(ctx, sb), nil
}

// sandboxAt finds the Sandbox controlling the one live Pod with IP addr. The Pod must be
// controlled by the Sandbox its label names, by a reference of kind Sandbox (provenance): a
// label alone anyone creating Pods can copy.
func (s *Source) sandboxAt(ctx context.Context, addr netip.Addr) (*sandboxv1beta1.Sandbox, error) {
	var pods corev1.PodList
	if err := s.cache.List(ctx, &pods, client.MatchingFields{podIPField: addr.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("the source %s cannot be looked up: %w", addr, err)
	}
	pod, err := holder(pods.Items, addr)
	if err != nil {
		if pod != nil {
			s.cfg.Log.Warn("Refusing the egress of a hostNetwork sandbox: its address is its node's", "pod", pod.Namespace+"/"+pod.Name, "source", addr.String())
		}
		return nil, err
	}
	sb := &sandboxv1beta1.Sandbox{}
	key := client.ObjectKey{Namespace: pod.Namespace, Name: pod.Labels[sandboxv1beta1.SandboxNameLabel]}
	if err := s.cache.Get(ctx, key, sb, client.UnsafeDisableDeepCopy); err != nil || !provenance.ControlledBy(pod, provenance.Sandbox, sb.UID) {
		return nil, egress.UnknownSource(addr)
	}
	return sb, nil
}

// holder is the one live Pod of pods (those with IP addr) that addr identifies. A terminating
// or terminated Pod holds nothing: its IP may already be another Pod's. A hostNetwork Pod's
// address is its node's, shared by every process on the node and every Pod whose traffic leaves
// through it, so it identifies no sandbox (the error says so, with that Pod); nor does an
// address two live Pods report.
func holder(pods []corev1.Pod, addr netip.Addr) (*corev1.Pod, error) {
	var live []*corev1.Pod
	for i := range pods {
		if pod := &pods[i]; sandboxv1beta1.PodLive(pod) {
			if pod.Spec.HostNetwork {
				return pod, fmt.Errorf("the source %s is the node address of sandbox Pod %s/%s, which runs with hostNetwork: "+
					"a node's address names no one sandbox, so kubox egress serves no hostNetwork sandbox; run it without hostNetwork",
					addr, pod.Namespace, pod.Name)
			}
			live = append(live, pod)
		}
	}
	switch len(live) {
	case 0:
		return nil, egress.UnknownSource(addr)
	case 1:
		return live[0], nil
	}
	return nil, fmt.Errorf("the source %s is the address of %d live Pods (%s/%s, %s/%s, ...): it names no one sandbox",
		addr, len(live), live[0].Namespace, live[0].Name, live[1].Namespace, live[1].Name)
}

// view returns the proxy's view of sb, rebuilt when sb changed or its credentials are older
// than SecretTTL.
func (s *Source) view(ctx context.Context, sb *sandboxv1beta1.Sandbox) *egress.Sandbox {
	s.mu.Lock()
	e := s.built[sb.UID]
	s.mu.Unlock()
	if e != nil && e.version == sb.ResourceVersion && time.Since(e.at) < s.cfg.SecretTTL {
		return e.sb
	}
	var ca *egress.CA
	if e != nil {
		ca = e.ca
	}
	ne := s.build(ctx, sb, ca)
	s.mu.Lock()
	s.built[sb.UID] = ne
	s.mu.Unlock()
	return ne.sb
}

func (s *Source) build(ctx context.Context, sb *sandboxv1beta1.Sandbox, ca *egress.CA) *entry {
	name := sb.Namespace + "/" + sb.Name
	p, err := Policy(sb.Spec.Egress)
	if err != nil {
		// CEL validated the CIDRs; an unparsable one means an older or edited object: refuse all.
		s.cfg.Log.Error("Sandbox has an invalid egress policy; refusing all its traffic", "sandbox", name, "error", err)
		p = &egress.Policy{}
	}
	for _, c := range sb.Spec.Egress.Credentials {
		value, err := s.secretValue(ctx, sb.Namespace, c.SecretRef)
		if err != nil {
			s.cfg.Log.Warn("Credential not added: its Secret cannot be read", "sandbox", name, "secret", c.SecretRef.Name, "key", c.SecretRef.Key, "error", err)
			continue
		}
		p.Credentials = append(p.Credentials, egress.Credential{Domains: c.Domains, Header: c.Header, Value: c.ValuePrefix + value})
	}
	if len(sb.Spec.Egress.Credentials) > 0 && ca == nil {
		if ca, err = s.loadCA(ctx, sb); err != nil {
			s.cfg.Log.Warn("Egress CA not loaded: credential domains cannot be inspected", "sandbox", name, "error", err)
		}
	}
	return &entry{version: sb.ResourceVersion, at: time.Now(), ca: ca, sb: &egress.Sandbox{Name: name, Policy: p, CA: ca}}
}

func (s *Source) secretValue(ctx context.Context, ns string, ref sandboxv1beta1.SecretKeyReference) (string, error) {
	sec := &corev1.Secret{}
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, sec); err != nil {
		return "", err
	}
	v, ok := sec.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
	}
	return strings.TrimSpace(string(v)), nil
}

// loadCA reads the sandbox's egress CA from the Secret the Sandbox controls.
func (s *Source) loadCA(ctx context.Context, sb *sandboxv1beta1.Sandbox) (*egress.CA, error) {
	sec := &corev1.Secret{}
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sandboxv1beta1.EgressCASecretName(sb.Name)}, sec); err != nil {
		return nil, err
	}
	if controllerUID(sec) != sb.UID {
		return nil, fmt.Errorf("secret %s is not controlled by the Sandbox", sec.Name)
	}
	return egress.LoadCA(sec.Data[sandboxv1beta1.EgressCACertKey], sec.Data[sandboxv1beta1.EgressCAKeyKey])
}

// Policy converts a Sandbox's egress to the proxy's Policy, without credentials (their values
// are in Secrets).
func Policy(e *sandboxv1beta1.EgressPolicy) (*egress.Policy, error) {
	p := &egress.Policy{AllowDomains: e.AllowDomains, DenyDomains: e.DenyDomains}
	var err error
	if p.AllowCIDRs, err = prefixes(e.AllowCIDRs); err != nil {
		return nil, err
	}
	if p.DenyCIDRs, err = prefixes(e.DenyCIDRs); err != nil {
		return nil, err
	}
	for _, port := range e.Ports {
		p.Ports = append(p.Ports, int(port))
	}
	return p, nil
}

func prefixes(cidrs []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		pfx, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, err
		}
		out = append(out, egress.CanonicalPrefix(pfx)) // ::ffff:10.0.0.0/104 is 10.0.0.0/8: addresses are unmapped too
	}
	return out, nil
}

func podIPs(o client.Object) []string {
	pod := o.(*corev1.Pod)
	out := make([]string, 0, len(pod.Status.PodIPs))
	for _, ip := range pod.Status.PodIPs {
		out = append(out, ip.IP)
	}
	if len(out) == 0 && pod.Status.PodIP != "" {
		out = append(out, pod.Status.PodIP)
	}
	return out
}

// controllerUID is the UID of o's controller, or "".
func controllerUID(o metav1.Object) types.UID {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return ref.UID
	}
	return ""
}

// trimPod keeps what the Source reads of a Pod: its name, labels, owners, deletion timestamp,
// hostNetwork, phase and IPs.
func trimPod(o any) (any, error) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	pod.Spec = corev1.PodSpec{HostNetwork: pod.Spec.HostNetwork}
	pod.ManagedFields, pod.Annotations = nil, nil
	pod.Status = corev1.PodStatus{Phase: pod.Status.Phase, PodIP: pod.Status.PodIP, PodIPs: pod.Status.PodIPs}
	return pod, nil
}
