package sandbox

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/egress"
)

// EgressCAVolumeName is the Secret volume holding a sandbox's egress CA certificate.
const EgressCAVolumeName = "kubox-egress-ca"

// proxyEnv are the variables naming the proxy, in both spellings: curl, wget and Python read
// the lowercase ones, Go and most others the uppercase ones.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}

// WithEgressProxy sets the proxy address (contract.EgressProxyURL) that sandboxes with
// spec.egress get in their environment, and returns r.
func (r *Reconciler) WithEgressProxy(url string) *Reconciler {
	r.egressProxy = url
	return r
}

// injectEgress points every container of the Pod at kubox-egress and, when the policy has
// credentials, mounts the sandbox's egress CA certificate and adds it to the trust of the
// runtimes that can add a CA without replacing the system roots:
//
//   - NODE_EXTRA_CA_CERTS (Node.js) adds a file to the built-in roots;
//   - SSL_CERT_DIR lists directories searched besides the default bundle file: Go reads every
//     certificate in them, so it gets the CA's directory and the usual system ones (OpenSSL
//     looks there only for hashed file names, so for OpenSSL it changes nothing);
//   - KUBOX_EGRESS_CA_FILE names the file for everything else (curl --cacert, Python's
//     requests via verify=, a Dockerfile's update-ca-certificates).
//
// SSL_CERT_FILE and REQUESTS_CA_BUNDLE are deliberately not set: they replace the trust store,
// and every domain without a credential is passed through with the real server's certificate,
// which only the image's own roots verify. The CA's name constraints make trusting it harmless
// for any other name. The init containers get the same settings (a pip install runs there too).
func (r *Reconciler) injectEgress(pod *corev1.Pod, sb *sandboxv1beta1.Sandbox) {
	env := []corev1.EnvVar{}
	for _, name := range proxyEnv {
		env = append(env, corev1.EnvVar{Name: name, Value: r.egressProxy})
	}
	noProxy := strings.Join([]string{"localhost", "127.0.0.1", "::1", ".svc", "." + r.clusterDomain}, ",")
	env = append(env, corev1.EnvVar{Name: "NO_PROXY", Value: noProxy}, corev1.EnvVar{Name: "no_proxy", Value: noProxy})
	var mount *corev1.VolumeMount
	if len(sb.Spec.Egress.Credentials) > 0 {
		env = append(env,
			corev1.EnvVar{Name: contract.EgressCAFileEnv, Value: contract.EgressCAFile},
			corev1.EnvVar{Name: "NODE_EXTRA_CA_CERTS", Value: contract.EgressCAFile},
			corev1.EnvVar{Name: "SSL_CERT_DIR", Value: contract.EgressCADir + ":/etc/ssl/certs:/etc/pki/tls/certs"},
		)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: EgressCAVolumeName, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{
				SecretName: sandboxv1beta1.EgressCASecretName(sb.Name),
				// Only the certificate: the key stays in the Secret, for kubox-egress.
				Items:       []corev1.KeyToPath{{Key: sandboxv1beta1.EgressCACertKey, Path: "ca.crt"}},
				DefaultMode: ptr.To[int32](0o444),
			}}})
		mount = &corev1.VolumeMount{Name: EgressCAVolumeName, MountPath: contract.EgressCADir, ReadOnly: true}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Env = withEnv(cs[i].Env, env)
			if mount != nil {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, *mount)
			}
		}
	}
}

// withEnv sets each of add in have, replacing a variable of the same name: the proxy is the
// only way out, so a template's own HTTP_PROXY would only break its sandbox.
func withEnv(have, add []corev1.EnvVar) []corev1.EnvVar {
	for _, v := range add {
		have = setNamed(have, v, func(e corev1.EnvVar) string { return e.Name })
	}
	return have
}

// ensureEgressCA creates the Secret holding the sandbox's egress CA, a CA that may sign only for
// its credentials' domains, before the Pod that mounts its certificate. An existing Secret the
// Sandbox owns is kept: the running Pod trusts the certificate in it.
func (r *Reconciler) ensureEgressCA(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	name := sandboxv1beta1.EgressCASecretName(sb.Name)
	have := &corev1.Secret{}
	err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: name}, have)
	switch {
	case err == nil && owns(sb, have):
		return nil
	case err == nil:
		return fmt.Errorf("secret %s exists and is not owned by Sandbox %s: rename or delete it so the "+
			"controller can keep the sandbox's egress CA there", name, sb.Name)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Secret %s: %w", name, err)
	}
	want, err := r.egressCASecret(sb)
	if err != nil {
		return err
	}
	if err := r.client.Create(ctx, want, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("creating Secret %s with the sandbox's egress CA: %w", name, err)
	}
	return nil
}

func (r *Reconciler) egressCASecret(sb *sandboxv1beta1.Sandbox) (*corev1.Secret, error) {
	ca, err := egress.NewCA(sb.Namespace+"/"+sb.Name, sb.Spec.Egress.CredentialDomains())
	if err != nil {
		return nil, fmt.Errorf("making the egress CA of Sandbox %s: %w", sb.Name, err)
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return nil, fmt.Errorf("encoding the egress CA key of Sandbox %s: %w", sb.Name, err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: sandboxv1beta1.EgressCASecretName(sb.Name), Namespace: sb.Namespace,
			Labels: secretLabels(sb),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{sandboxv1beta1.EgressCACertKey: ca.PEM, sandboxv1beta1.EgressCAKeyKey: key},
	}
	if err := controllerutil.SetControllerReference(sb, s, r.scheme); err != nil {
		return nil, fmt.Errorf("setting the owner of Secret %s: %w", s.Name, err)
	}
	return s, nil
}
