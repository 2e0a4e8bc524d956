package v1beta1

import (
	"slices"
	"strings"
)

// EgressPolicy states by domain what a sandbox may reach; its traffic leaves only through
// kubox-egress, which enforces it. kubox addition.
//
// On a SandboxTemplate it is the policy of every sandbox built from it; on a Sandbox it is the
// sandbox's effective policy (its template's, narrowed by its claim's egress), which
// kubox-egress reads. A sandbox with egress gets the proxy's address in HTTP_PROXY/HTTPS_PROXY,
// and its template's managed NetworkPolicy lets it reach only the proxy and cluster DNS.
// Listing nothing allows nothing: a name matching no allowDomains is refused.
// +kubebuilder:validation:XValidation:rule="!has(self.credentials) || self.credentials.all(c, c.domains.all(d, has(self.allowDomains) && self.allowDomains.exists(a, a == d || (a.startsWith('*.') && d.endsWith(a.substring(1))))))",message="egress.credentials[].domains must each be covered by egress.allowDomains (the same name, or below a '*.' wildcard): a credential is sent only to allowed domains; add the domain to allowDomains or remove it from the credential"
type EgressPolicy struct {
	// allowDomains are the names the sandbox may reach: exact names ("pypi.org") and wildcards
	// ("*.pythonhosted.org": any name below it, not the name itself). Lowercase. A name that
	// matches none is refused.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	AllowDomains []string `json:"allowDomains,omitempty"`

	// denyDomains are names refused even when allowDomains match them, in the same form.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	DenyDomains []string `json:"denyDomains,omitempty"`

	// allowCIDRs are address ranges ("203.0.113.0/24") the sandbox may reach by IP address. One
	// that lies inside a blocked range (private, link-local, metadata, ...: docs/egress.md) also
	// lets an allowed name resolve into that part of it; a wider one (0.0.0.0/0, ::/0) holds only
	// public addresses. IPv4-mapped, NAT64 and 6to4 forms are checked as the IPv4 address inside.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="egress.allowCIDRs must be CIDRs such as 203.0.113.0/24 or 2001:db8::/32"
	AllowCIDRs []string `json:"allowCIDRs,omitempty"`

	// denyCIDRs are address ranges refused whatever name resolves into them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="egress.denyCIDRs must be CIDRs such as 203.0.113.0/24 or 2001:db8::/32"
	DenyCIDRs []string `json:"denyCIDRs,omitempty"`

	// ports are the destination ports the sandbox may reach. Default: 80 and 443.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65535
	Ports []int32 `json:"ports,omitempty"`

	// credentials are headers kubox-egress adds to HTTPS requests for some of the allowed
	// domains, with values from Secrets in the sandbox's namespace that the sandbox never sees.
	// For those domains only, the proxy terminates TLS with a certificate from the sandbox's own
	// CA, whose certificate is mounted into the sandbox.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Credentials []EgressCredential `json:"credentials,omitempty"`
}

// EgressCredential is a header kubox-egress adds to requests for some domains. kubox addition.
type EgressCredential struct {
	// secretRef names the Secret key, in the sandbox's namespace, that holds the header's value
	// (leading and trailing whitespace, such as a final newline, is dropped). Whoever adds the
	// credential must be allowed to get that Secret (checked at admission): kubox-egress reads it
	// with its own rights.
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`

	// header is the header's name, such as Authorization or x-api-key. A value the sandbox
	// sent in it is replaced. Hop-by-hop, framing and proxy headers cannot be set.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'te', 'trailer', 'keep-alive']) && !self.lowerAscii().startsWith('proxy-')",message="egress.credentials[].header must not be a hop-by-hop, framing or proxy header (Host, Content-Length, Transfer-Encoding, Connection, Upgrade, TE, Trailer, Keep-Alive, Proxy-*)"
	Header string `json:"header"`

	// valuePrefix is put before the Secret's value, such as "Bearer ".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[ -~]*$`
	ValuePrefix string `json:"valuePrefix,omitempty"`

	// domains are the names whose requests get the header, in the form of allowDomains; each
	// must be covered by allowDomains.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	Domains []string `json:"domains"`
}

// SecretKeyReference names a key of a Secret in the referring object's namespace.
type SecretKeyReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key in the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// EgressRestriction narrows a template's egress for one claim's sandbox: it can take away
// destinations, never add one, and it can add credentials for destinations the sandbox may
// reach. kubox addition.
// +kubebuilder:validation:XValidation:rule="!has(self.credentials) || !has(self.allowDomains) || self.credentials.all(c, c.domains.all(d, self.allowDomains.exists(a, a == d || (a.startsWith('*.') && d.endsWith(a.substring(1))))))",message="egress.credentials[].domains must each be covered by the claim's egress.allowDomains (the same name, or below a '*.' wildcard): a credential is sent only to allowed domains"
type EgressRestriction struct {
	// allowDomains replace the template's allowDomains; each must be covered by one of the
	// template's (the same name, or below one of its wildcards), or the claim gets Ready=False
	// with reason EgressRejected.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	AllowDomains []string `json:"allowDomains,omitempty"`

	// denyDomains are added to the template's denyDomains.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	DenyDomains []string `json:"denyDomains,omitempty"`

	// denyCIDRs are added to the template's denyCIDRs.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="egress.denyCIDRs must be CIDRs such as 203.0.113.0/24 or 2001:db8::/32"
	DenyCIDRs []string `json:"denyCIDRs,omitempty"`

	// credentials are added to the template's, for this claim's sandbox only: headers
	// kubox-egress adds to HTTPS requests for some of the domains the sandbox may reach (the
	// claim's allowDomains, else the template's, which must cover each of their domains, or the
	// claim gets Ready=False with reason EgressRejected), with values from Secrets in the claim's
	// namespace. A header the template's credentials also set for a domain takes the claim's
	// value. From a warm pool, a claim whose credential domains its template's credentials do not
	// cover gets a sandbox created for it: a warm sandbox trusts a CA for its template's
	// credential domains only.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Credentials []EgressCredential `json:"credentials,omitempty"`
}

// DomainCovers reports whether the domain pattern outer covers inner: the same pattern, or
// inner (a name or a wildcard) below outer's "*." wildcard. It is the rule the CEL validation
// of credentials and the claim controller's check of a claim's allowDomains share.
func DomainCovers(outer, inner string) bool {
	if outer == inner {
		return true
	}
	suffix, ok := strings.CutPrefix(outer, "*")
	return ok && strings.HasSuffix(inner, suffix)
}

// UncoveredDomain returns the first of domains no pattern in by covers, or "".
func UncoveredDomain(domains, by []string) string {
	for _, d := range domains {
		if !slices.ContainsFunc(by, func(o string) bool { return DomainCovers(o, d) }) {
			return d
		}
	}
	return ""
}

// Narrow returns the effective policy of a sandbox whose template has p and whose claim has r:
// r's allowDomains replace p's, r's denies are added, each of p's credentials keeps only the
// domains still allowed (a credential left with none is dropped), and r's credentials follow
// p's (so kubox-egress, applying them in order, gives a header both set r's value). The caller
// checks first that r's allowDomains are covered by p's and r's credential domains by the
// result's allowDomains (UncoveredDomain).
func (p *EgressPolicy) Narrow(r *EgressRestriction) *EgressPolicy {
	out := p.DeepCopy()
	if r == nil {
		return out
	}
	if len(r.AllowDomains) > 0 {
		out.AllowDomains = slices.Clone(r.AllowDomains)
	}
	out.DenyDomains = union(out.DenyDomains, r.DenyDomains)
	out.DenyCIDRs = union(out.DenyCIDRs, r.DenyCIDRs)
	creds := out.Credentials[:0]
	for _, c := range out.Credentials {
		c.Domains = slices.DeleteFunc(c.Domains, func(d string) bool { return UncoveredDomain([]string{d}, out.AllowDomains) != "" })
		if len(c.Domains) > 0 {
			creds = append(creds, c)
		}
	}
	out.Credentials = append(creds, r.DeepCopy().Credentials...)
	if len(out.Credentials) == 0 {
		out.Credentials = nil
	}
	return out
}

// CredentialDomains are the domains of all credentials, in order, without repeats: those the
// sandbox's egress CA may sign for.
func (p *EgressPolicy) CredentialDomains() []string {
	var out []string
	for _, c := range p.Credentials {
		out = union(out, c.Domains)
	}
	return out
}

func union(a, b []string) []string {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

// EgressCASecretName is the Secret holding a sandbox's egress CA: its certificate (key
// EgressCACertKey, mounted into the sandbox) and private key (EgressCAKeyKey, read only by
// kubox-egress).
func EgressCASecretName(sandboxName string) string { return sandboxName + "-kubox-egress-ca" }

// Keys of the egress CA Secret.
const (
	EgressCACertKey = "ca.crt"
	EgressCAKeyKey  = "ca.key"
)
