package contract

import (
	"fmt"
	"strconv"
)

// kubox-egress is the proxy through which sandboxes with spec.egress reach the outside.
// kubox-controller points their Pods at it (HTTP_PROXY/HTTPS_PROXY, EgressProxyURL) and lets them
// reach only its Pods in the template's NetworkPolicy; kubox-egress listens on EgressProxyPort
// behind the Service EgressServiceName; the chart and kubox dev deploy both.
const (
	// EgressServiceName is the Service (and the app.kubernetes.io/name label of the Pods) of
	// kubox-egress.
	EgressServiceName = "kubox-egress"
	// EgressProxyPort is the port kubox-egress serves its HTTP proxy on, in its Pods and its
	// Service.
	EgressProxyPort = 3128
)

// EgressProxyURL is the proxy address a sandbox gets in HTTP_PROXY and HTTPS_PROXY: the
// kubox-egress Service in namespace.
func EgressProxyURL(namespace, clusterDomain string) string {
	return fmt.Sprintf("http://%s.%s.svc.%s:%s", EgressServiceName, namespace, clusterDomain, strconv.Itoa(EgressProxyPort))
}

// Where a sandbox finds its egress CA certificate (the CA that signs the certificates of the
// domains kubox-egress adds credentials for). kubox-controller mounts it; code in the sandbox
// reads EgressCAFileEnv to trust it.
const (
	// EgressCADir is the directory holding the certificate, as EgressCAFile.
	EgressCADir = "/.kubox/egress-ca"
	// EgressCAFile is the CA certificate (PEM).
	EgressCAFile = EgressCADir + "/ca.crt"
	// EgressCAFileEnv names EgressCAFile in the sandbox's environment.
	EgressCAFileEnv = "KUBOX_EGRESS_CA_FILE"
)
