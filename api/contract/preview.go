package contract

import (
	"crypto/sha256"
	"encoding/base32"
	"net"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Preview hosts are the host names under which kubox-router serves a sandbox's ports to
// browsers: "{port}-{id}.{domain}", where id is PreviewID of the sandbox's UID and domain is the
// router's preview domain. kubox-controller writes the id into the Sandbox's status; kubox-router
// parses hosts with ParsePreviewHost and finds the sandbox by its id.
//
// The id is derived from the UID, not the sandbox's name, so a host name reveals neither the
// namespace nor the name, and a sandbox deleted and recreated under the same name gets a new
// host: a link to the old one stops working instead of reaching someone else's sandbox.

// PreviewIDLength is the length of a preview id: 12 base32 characters, 60 bits of the digest.
const PreviewIDLength = 12

// MaxPreviewLabelLength is the longest DNS label; "{port}-{id}" is at most 5+1+12 = 18
// characters.
const MaxPreviewLabelLength = 63

// previewDomain separates preview ids from any other digest of a UID.
const previewDomain = "kubox-router-preview-id/v1\x00"

var previewEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// PreviewID returns the preview id of the sandbox with uid: the first PreviewIDLength characters
// of the lowercase, unpadded base32 encoding of SHA-256("kubox-router-preview-id/v1\x00" || uid).
func PreviewID(uid types.UID) string {
	sum := sha256.Sum256([]byte(previewDomain + string(uid)))
	return previewEncoding.EncodeToString(sum[:])[:PreviewIDLength]
}

// PreviewLabel returns the host label "{port}-{id}" for a sandbox's port.
func PreviewLabel(port int, id string) string {
	return strconv.Itoa(port) + "-" + id
}

// PreviewHost returns the full preview host name of a sandbox's port under domain.
func PreviewHost(port int, id, domain string) string {
	return PreviewLabel(port, id) + "." + strings.TrimSuffix(strings.ToLower(domain), ".")
}

// ParsePreviewHost reads a preview host: "{port}-{id}.{domain}", in any case, with or without a
// ":port" suffix (the listener's port, not the sandbox's) or a trailing dot. It reports false
// for any other host, including ports outside 1–65535, ports written with leading zeros, and ids
// that are not PreviewIDLength base32 characters, and for every host when domain is empty.
func ParsePreviewHost(host, domain string) (port int, id string, ok bool) {
	if domain == "" {
		return 0, "", false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	label, ok := strings.CutSuffix(host, "."+domain)
	if !ok || label == "" || strings.Contains(label, ".") {
		return 0, "", false
	}
	portStr, id, ok := strings.Cut(label, "-")
	if !ok || !validPreviewID(id) {
		return 0, "", false
	}
	port, ok = parsePort(portStr)
	if !ok {
		return 0, "", false
	}
	return port, id, true
}

func validPreviewID(id string) bool {
	if len(id) != PreviewIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// parsePort accepts 1–65535 in canonical decimal (no sign, no leading zeros).
func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, false
	}
	return p, true
}
