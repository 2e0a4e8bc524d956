// Package preview names the hosts under which kubox-router serves a sandbox's ports to browsers:
// "{port}-{id}.{domain}", where id is a short, stable digest of the sandbox's UID.
//
// The id is derived from the UID, not the sandbox's name, so a host name reveals neither the
// namespace nor the name, and a sandbox deleted and recreated under the same name gets a new
// host: a link to the old one stops working instead of reaching someone else's sandbox.
package preview

import (
	"crypto/sha256"
	"encoding/base32"
	"net"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// IDLength is the length of a preview id: 12 base32 characters, 60 bits of the digest.
const IDLength = 12

// MaxLabelLength is the longest DNS label; "{port}-{id}" is at most 5+1+12 = 18 characters.
const MaxLabelLength = 63

// domain separates preview ids from any other digest of a UID.
const domain = "kubox-router-preview-id/v1\x00"

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ID returns the preview id of the sandbox with uid: the first IDLength characters of the
// lowercase, unpadded base32 encoding of SHA-256(domain || uid).
func ID(uid types.UID) string {
	sum := sha256.Sum256([]byte(domain + string(uid)))
	return encoding.EncodeToString(sum[:])[:IDLength]
}

// Label returns the host label "{port}-{id}" for a sandbox's port.
func Label(port int, id string) string {
	return strconv.Itoa(port) + "-" + id
}

// Host returns the full preview host name of a sandbox's port under domain.
func Host(port int, id, domain string) string {
	return Label(port, id) + "." + strings.TrimSuffix(strings.ToLower(domain), ".")
}

// ParseHost reads a preview host: "{port}-{id}.{domain}", in any case, with or without a
// ":port" suffix (the listener's port, not the sandbox's) or a trailing dot. It reports false
// for any other host, including ports outside 1–65535, ports written with leading zeros, and ids
// that are not IDLength base32 characters.
func ParseHost(host, domain string) (port int, id string, ok bool) {
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
	if !ok || !validID(id) {
		return 0, "", false
	}
	port, ok = parsePort(portStr)
	if !ok {
		return 0, "", false
	}
	return port, id, true
}

func validID(id string) bool {
	if len(id) != IDLength {
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
